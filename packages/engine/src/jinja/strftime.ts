// Python's datetime.strftime in the C locale, for `strftime_now`.

const DAYS = [
  "Sunday",
  "Monday",
  "Tuesday",
  "Wednesday",
  "Thursday",
  "Friday",
  "Saturday",
];
const MONTHS = [
  "January",
  "February",
  "March",
  "April",
  "May",
  "June",
  "July",
  "August",
  "September",
  "October",
  "November",
  "December",
];

function pad(n: number, width = 2): string {
  return String(n).padStart(width, "0");
}

function dayOfYear(date: Date): number {
  const start = Date.UTC(date.getFullYear(), 0, 1);
  const today = Date.UTC(date.getFullYear(), date.getMonth(), date.getDate());
  return (today - start) / 86_400_000 + 1;
}

function field(date: Date, directive: string): number | string | undefined {
  const hour12 = date.getHours() % 12 || 12;
  switch (directive) {
    case "d":
      return date.getDate();
    case "m":
      return date.getMonth() + 1;
    case "Y":
      return String(date.getFullYear());
    case "y":
      return date.getFullYear() % 100;
    case "H":
      return date.getHours();
    case "I":
      return hour12;
    case "M":
      return date.getMinutes();
    case "S":
      return date.getSeconds();
    case "j":
      return pad(dayOfYear(date), 3);
    case "a":
      return DAYS[date.getDay()]!.slice(0, 3);
    case "A":
      return DAYS[date.getDay()]!;
    case "b":
      return MONTHS[date.getMonth()]!.slice(0, 3);
    case "B":
      return MONTHS[date.getMonth()]!;
    case "p":
      return date.getHours() < 12 ? "AM" : "PM";
    case "%":
      return "%";
  }
  return undefined;
}

/**
 * Formats a date in local time as Python's `strftime` does in the C locale
 * (glibc), for the directives chat templates use, including `%-d` (no padding).
 * Unknown directives are kept as written, as glibc does.
 */
export function strftime(date: Date, format: string): string {
  return format.replace(
    /%(-?)([a-zA-Z%])/g,
    (whole, noPad: string, d: string) => {
      const value = field(date, d);
      if (value === undefined) return whole;
      if (typeof value === "string") return value;
      return noPad === "-" ? String(value) : pad(value);
    },
  );
}
