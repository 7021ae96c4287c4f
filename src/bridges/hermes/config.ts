/**
 * Hermes' settings: the `config.yaml` whose window the proxy follows, the
 * Python that runs Hermes, the release mirrored where Hermes is not
 * installed, and the models budgeted besides Hermes' own.
 *
 * @module
 */
import type { SettingsOf } from "../../_internal/setting.ts";
import { commaItems, oneOf, text } from "../../_internal/setting_parsers.ts";
import type { BudgetConfig } from "../../core/budget_config.ts";
import {
  HERMES_RELEASES,
  type HermesRelease,
  releaseList,
} from "./threshold.ts";

/**
 * What Hermes' bridge reads of the configuration: its own settings, the
 * budget's, and the model the proxy budgets.
 */
export type HermesConfig = BudgetConfig & {
  readonly hermesConfig?: string;
  readonly hermesPython?: string;
  readonly hermesRelease?: HermesRelease;
  readonly hermesModels?: readonly string[];
  /** `INCONTEXT_BUDGET_MODEL`: the model budgeted instead of Hermes' `model.default`. */
  readonly model?: string;
};

/** Hermes' settings, by the property each one sets. */
export const HERMES_SETTINGS: SettingsOf<
  Omit<HermesConfig, keyof BudgetConfig | "model">
> = {
  hermesConfig: {
    variable: "INCONTEXT_HERMES_CONFIG",
    flag: "--hermes-config PATH",
    doc:
      "a Hermes `config.yaml`: W and C from the installed Hermes; budgets `model.default`",
    parse: text,
  },
  hermesPython: {
    variable: "INCONTEXT_HERMES_PYTHON",
    flag: "--hermes-python PATH",
    shownDefault: "the `hermes` executable's, else `python3`",
    doc: "the Python that runs Hermes",
    parse: text,
  },
  hermesRelease: {
    variable: "INCONTEXT_HERMES_RELEASE",
    flag: "--hermes-release R",
    doc:
      "without Hermes installed: mirror `2026-07` (Hermes 0.18.x), `0.19` or `2026-09`",
    parse: oneOf(HERMES_RELEASES, `must be ${releaseList()}`),
  },
  hermesModels: {
    variable: "INCONTEXT_HERMES_MODELS",
    flag: "--hermes-models A,B",
    doc:
      "comma-separated models budgeted besides `model.default`, each with its own W",
    parse: (value) => {
      const items = commaItems(value);
      return items.every((item) => item !== "")
        ? { value: Object.freeze(items) as readonly string[], rules: [] }
        : { rules: ["must be a comma-separated list of model names"] };
    },
  },
};
