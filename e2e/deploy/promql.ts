/**
 * The metric names a PromQL expression reads. Hand-written rather than a parser library: no PromQL parser is published for
 * JavaScript that this project could pin, and the kit's expressions use a small subset (selectors, ranges, aggregations
 * with by/without, functions, arithmetic and comparisons). Label matchers, strings, grouping lists, ranges and durations
 * are removed first; what remains that is neither a function call, a keyword nor a number is a metric name.
 */
const KEYWORDS = new Set(["by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset", "inf", "nan", "atan2"]);

export function metricNames(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, " ") // strings
    .replace(/\{[^}]*\}/g, " ") // label matchers
    .replace(/\[[^\]]*\]/g, " ") // ranges and subqueries
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, " "); // label lists
  const names = new Set<string>();
  for (const match of stripped.matchAll(/([A-Za-z_:][A-Za-z0-9_:]*)(\s*\()?/g)) {
    const [, name, call] = match;
    if (call || KEYWORDS.has(name!.toLowerCase()) || name!.startsWith("$")) continue;
    const before = stripped[match.index! - 1];
    if (before !== undefined && /[0-9.$]/.test(before)) continue; // the unit of a duration or part of a variable
    names.add(name!);
  }
  return [...names].sort();
}

/** The metric names a /metrics exposition registers: every `# TYPE` family, with a histogram's or summary's series names. */
export function registeredMetricNames(exposition: string): Set<string> {
  const names = new Set<string>();
  for (const [, name, type] of exposition.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(name!);
    if (type === "histogram") for (const suffix of ["_bucket", "_sum", "_count"]) names.add(name! + suffix);
    if (type === "summary") for (const suffix of ["_sum", "_count"]) names.add(name! + suffix);
  }
  return names;
}
