/**
 * `GET /incontext/`: one self-contained HTML page (no CDN, no build step)
 * that charts the recent decisions per model: each request's prompt tokens
 * against W and the context length, the cap sent above it, compress and
 * refusal events marked; and each model's counts verified by the server's
 * usage. It reads `/incontext/context` and redraws every few
 * seconds; the configuration is written out in words on the server.
 */
import type { ProxyContext } from "./state.ts";

/** How often the page reads the decisions again, in milliseconds. */
const REFRESH_MS = 5000;

/** The page, with the configuration in words. */
export function statusPage(context: ProxyContext): Response {
  return new Response(
    PAGE.replace("<!--CONFIG-->", () => configuration(context)),
    {
      headers: {
        "content-type": "text/html; charset=utf-8",
        "cache-control": "no-store",
        // Everything the page needs is inline; it only ever reads the context.
        "content-security-policy":
          "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'",
      },
    },
  );
}

function configuration(context: ProxyContext): string {
  const { options, settings, backend } = context;
  const n = (value: number) => value.toLocaleString("en-US");
  const w = options.window;
  const c = options.contextLength;
  const r = options.minOutputTokens ?? 4096;
  const f = options.fallbackMarginTokens ?? 1024;
  const policy = options.onExhausted ?? "clamp";
  const upstream = settings.upstream;
  const onExhausted = {
    clamp:
      `it sends the cap min(its own cap, R), so that the reply leaves room for the compression request, and marks the request "compress"; when C no longer holds that cap after the prompt, it answers 400 context_length_exceeded itself`,
    reject:
      `it answers 400 context_length_exceeded itself, so that the host compresses and retries`,
    unchanged: `it forwards the request unchanged`,
  }[policy];
  const sentences = [
    `Requests go to <b>${
      escapeHtml(`${upstream.protocol}//${upstream.host}`)
    }</b>; prompts are counted by <b>${escapeHtml(backend.source)}</b>.`,
    `Each request gets the output cap min(its own cap, W − its prompt tokens), with W = <b>${
      n(w)
    }</b> tokens, the window at which the host compresses, in a context of C = <b>${
      n(c)
    }</b> tokens.`,
    `When less than R = ${n(r)} tokens would be left, ${onExhausted}.`,
    `When the count is only an estimate, ${n(f)} more tokens are kept free.`,
    ...estimates(context, n(f)),
    `Each exact count is checked against the prompt tokens the server reports in its response's usage (a stream reports them when the client asks with stream_options.include_usage); estimates are not checked.`,
  ];
  return sentences.map((s) => `<p>${s}</p>`).join("\n");
}

/**
 * What the backend says of the model it is configured for, when it knows
 * its counts are not the server's prompt (gpt-oss, which vLLM renders
 * through Harmony): which count is used instead, and why.
 */
function estimates(context: ProxyContext, f: string): string[] {
  const model = context.options.route?.model;
  const reason = context.backend.estimateReason(
    typeof model === "string" ? model : undefined,
  );
  return reason === undefined ? [] : [
    `<b>Counts are not exact</b>: ${
      escapeHtml(reason)
    }. They come from the last response's usage where a conversation has one, and otherwise are estimates with ${f} tokens kept free.`,
  ];
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

// The script builds every node with createElementNS/textContent: model names
// come from clients and never reach innerHTML.
const SCRIPT = `
const SVG = "http://www.w3.org/2000/svg";
const WIDTH = 760, HEIGHT = 260, LEFT = 64, RIGHT = 110, TOP = 12, BOTTOM = 28;
const fmt = (n) => n.toLocaleString("en-US");
function el(name, attrs, parent) {
  const node = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (parent) parent.appendChild(node);
  return node;
}
function chart(model, decisions, view) {
  const top = view.contextLength * 1.05;
  const n = decisions.length;
  const x = (i) => LEFT + 12 + (n === 1 ? 0.5 : i / (n - 1)) * (WIDTH - LEFT - RIGHT - 24);
  const y = (v) => TOP + (1 - Math.min(v, top) / top) * (HEIGHT - TOP - BOTTOM);
  const svg = el("svg", { viewBox: "0 0 " + WIDTH + " " + HEIGHT, class: "chart", role: "img" });
  svg.dataset.model = model;
  for (const f of [0, 0.25, 0.5, 0.75, 1]) {
    const v = Math.round(view.contextLength * f);
    el("line", { x1: LEFT, x2: WIDTH - RIGHT, y1: y(v), y2: y(v), class: "grid" }, svg);
    el("text", { x: LEFT - 6, y: y(v) + 4, class: "tick" }, svg).textContent = fmt(v);
  }
  const limits = [["c-line", view.contextLength, "context " + fmt(view.contextLength)], ["w-line", view.window, "W " + fmt(view.window)]];
  for (const [cls, v, label] of limits) {
    const line = el("line", { x1: LEFT, x2: WIDTH - RIGHT, y1: y(v), y2: y(v), class: cls }, svg);
    line.dataset.tokens = v;
    el("text", { x: WIDTH - RIGHT + 6, y: y(v) + 4, class: cls + "-label" }, svg).textContent = label;
  }
  const counted = decisions.map((d, i) => [d, i]).filter(([d]) => d.promptTokens !== null);
  el("polyline", { class: "prompt", points: counted.map(([d, i]) => x(i) + "," + y(d.promptTokens)).join(" ") }, svg);
  for (const [d, i] of counted) {
    if (d.maxTokens !== null) {
      const cap = el("line", { x1: x(i), x2: x(i), y1: y(d.promptTokens), y2: y(d.promptTokens + d.maxTokens), class: "cap" }, svg);
      cap.dataset.tokens = d.maxTokens;
    }
    const point = el("circle", { cx: x(i), cy: y(d.promptTokens), r: 3.5, class: "point " + d.action }, svg);
    point.dataset.tokens = d.promptTokens;
    el("title", {}, point).textContent = d.time + " " + d.kind + ": " + fmt(d.promptTokens) + " prompt tokens (" + d.source + "), " +
      (d.rejected ? "refused" : d.action) + (d.maxTokens === null ? "" : ", cap " + fmt(d.maxTokens));
    const cx = x(i), cy = y(d.promptTokens);
    if (d.rejected) {
      el("path", { d: "M" + (cx - 6) + " " + (cy - 6) + "l12 12m0 -12l-12 12", class: "refusal" }, svg);
    } else if (d.action === "compress") {
      el("path", { d: "M" + cx + " " + (cy - 13) + "l6 9h-12z", class: "compress" }, svg);
    }
  }
  el("text", { x: LEFT, y: HEIGHT - 8, class: "tick start" }, svg).textContent = "oldest";
  el("text", { x: WIDTH - RIGHT, y: HEIGHT - 8, class: "tick" }, svg).textContent = "newest (" + n + " requests)";
  return svg;
}
const percent = (rate) => (rate * 100).toFixed(1) + "%";
function verifiedText(v) {
  return fmt(v.equal) + " of " + fmt(v.checked) + " counts verified (" + percent(v.rate) + ")";
}
function verificationTable(verification) {
  const holder = document.getElementById("verification");
  holder.replaceChildren();
  if (verification.models.length === 0) {
    holder.textContent = "No count checked against a response's usage yet.";
    return;
  }
  const table = document.createElement("table");
  const head = table.insertRow();
  for (const text of ["model", "verified", "counted by", "last difference"]) {
    const th = document.createElement("th");
    th.textContent = text;
    head.appendChild(th);
  }
  for (const v of verification.models) {
    const row = table.insertRow();
    row.dataset.model = v.model;
    row.className = v.equal === v.checked ? "all-equal" : "differs";
    const d = v.lastDiffer;
    const cells = [v.model, verifiedText(v), v.source,
      d === null ? "none" : d.source + ": counted " + fmt(d.counted) + ", usage " + fmt(d.served)];
    for (const text of cells) row.insertCell().textContent = text;
  }
  holder.appendChild(table);
}
async function refresh() {
  const status = document.getElementById("updated");
  try {
    const response = await fetch("context", { cache: "no-store" });
    if (!response.ok) throw new Error("HTTP " + response.status);
    const view = await response.json();
    const groups = new Map();
    for (const d of view.decisions) {
      const key = d.model ?? "(no model)";
      if (!groups.has(key)) groups.set(key, []);
      groups.get(key).push(d);
    }
    verificationTable(view.verification);
    const verified = new Map(view.verification.models.map((v) => [v.model, v]));
    const charts = document.getElementById("charts");
    charts.replaceChildren();
    for (const [model, decisions] of groups) {
      const section = document.createElement("section");
      const title = document.createElement("h2");
      title.textContent = model;
      const v = verified.get(model);
      if (v !== undefined) {
        const note = document.createElement("span");
        note.className = "verified";
        note.textContent = verifiedText(v);
        title.append(" ", note);
      }
      section.append(title, chart(model, decisions, view));
      charts.appendChild(section);
    }
    if (groups.size === 0) charts.textContent = "No budgeted request yet.";
    document.body.dataset.decisions = view.decisions.length;
    status.textContent = "Updated " + new Date().toLocaleTimeString() + "; " + view.decisions.length + " recent decisions." +
      (view.modelNames === "hidden" ? " Model names are hidden: set INCONTEXT_ADMIN_TOKEN to see them from anywhere." : "");
  } catch (error) {
    status.textContent = "Could not read the decisions: " + error.message;
  }
}
refresh();
setInterval(refresh, ${REFRESH_MS});
`;

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>incontext</title>
<style>
body { font: 15px/1.45 system-ui, sans-serif; margin: 24px auto; max-width: 820px; color: #1d2330; padding: 0 12px; }
h1 { font-size: 22px; margin-bottom: 4px; }
h2 { font-size: 16px; margin: 22px 0 4px; overflow-wrap: anywhere; }
.config p { margin: 4px 0; }
#updated { color: #5b6477; font-size: 13px; }
.legend span { margin-right: 16px; font-size: 13px; white-space: nowrap; }
.legend i { display: inline-block; width: 18px; height: 3px; vertical-align: middle; margin-right: 4px; }
svg.chart { width: 100%; height: auto; background: #fafbfd; border: 1px solid #e3e6ee; border-radius: 6px; }
.grid { stroke: #e8ebf2; }
.tick { font-size: 11px; fill: #6b7385; text-anchor: end; }
.tick.start { text-anchor: start; }
.w-line { stroke: #d97706; stroke-width: 2; stroke-dasharray: 6 4; }
.c-line { stroke: #b91c1c; stroke-width: 2; }
.w-line-label { fill: #b45309; font-size: 12px; }
.c-line-label { fill: #b91c1c; font-size: 12px; }
.prompt { fill: none; stroke: #2563eb; stroke-width: 1.5; }
.point { fill: #2563eb; }
.cap { stroke: #16a34a; stroke-width: 3; opacity: 0.45; }
.compress { fill: #d97706; }
.refusal { stroke: #b91c1c; stroke-width: 2.5; }
h2 .verified { font-weight: normal; font-size: 13px; color: #5b6477; }
#verification table { border-collapse: collapse; font-size: 13px; }
#verification th, #verification td { text-align: left; padding: 2px 12px 2px 0; overflow-wrap: anywhere; }
#verification tr.differs td { color: #b91c1c; }
</style>
</head>
<body>
<h1>incontext</h1>
<div class="config">
<!--CONFIG-->
</div>
<p class="legend">
<span><i style="background:#2563eb"></i>prompt tokens per request</span>
<span><i style="background:#16a34a;opacity:.45"></i>cap sent</span>
<span><i style="background:#d97706"></i>W</span>
<span><i style="background:#b91c1c"></i>context length</span>
<span>&#9650; compress</span>
<span>&#10005; refused</span>
</p>
<p id="updated">Reading the decisions…</p>
<h2>Counts checked against the server's usage</h2>
<div id="verification"></div>
<div id="charts"></div>
<script>${SCRIPT}</script>
</body>
</html>
`;
