import { configure, type LogRecord, reset } from "@logtape/logtape";

/** Captures every incontext log record, rendered to text, until disposed. */
export async function captureLogs(): Promise<
  { lines: string[] } & AsyncDisposable
> {
  const lines: string[] = [];
  await configure({
    sinks: {
      capture: (record: LogRecord) => {
        lines.push(
          `${record.category.join(".")} ${record.level} ${
            record.message.map(String).join("")
          } ${JSON.stringify(record.properties)}`,
        );
      },
    },
    loggers: [
      { category: ["incontext"], lowestLevel: "trace", sinks: ["capture"] },
      { category: ["logtape", "meta"], lowestLevel: "warning", sinks: [] },
    ],
    reset: true,
  });
  return {
    lines,
    [Symbol.asyncDispose]: () => reset(),
  };
}
