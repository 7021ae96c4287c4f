import { configure, type LogRecord, reset } from "@logtape/logtape";

/** Captures every incontext log record, also rendered to text, until disposed. */
export async function captureLogs(): Promise<
  { lines: string[]; records: LogRecord[] } & AsyncDisposable
> {
  const lines: string[] = [];
  const records: LogRecord[] = [];
  await configure({
    sinks: {
      capture: (record: LogRecord) => {
        records.push(record);
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
    records,
    [Symbol.asyncDispose]: () => reset(),
  };
}
