"use strict";
// The four views. Each takes the view context built by app.js:
// { trace, tokens, sizes, state, t(key, fields), update(patch) } and returns its content.

const PER_HEAD = (axes) => axes.includes("H");

function shapeLabel(context, stage) {
  const axes = context.axes[stage];
  const shape = context.trace.shapes[stage];
  // Two unbreakable halves, so a narrow column breaks the label only before "=".
  return element("span", { class: "shape", "data-stage": stage },
    element("span", { class: "nowrap", text: `(${axes.join(", ")})` }), " ",
    element("span", { class: "nowrap", text: `= (${shape.join(", ")})` }));
}

function stageLabels(context, stage) {
  // Rows of T-axis stages are the query tokens; of S-axis stages, the key tokens (the same here).
  return context.tokens;
}

function stageMatrix(context, stage, head, cell, extra = {}) {
  const values = context.trace.stages[stage];
  const matrix = head === null ? values : values[head];
  const isWeights = stage === "weights";
  return heatmap(matrix, {
    rows: extra.labels ? stageLabels(context, stage) : null,
    columns: isWeights && extra.labels ? context.tokens : null,
    scale: isWeights ? "unit" : "signed",
    limit: isWeights ? 1 : context.limits[stage],
    cell,
    annotate: extra.annotate || false,
    bands: !isWeights && head === null && ["queries", "keys", "values", "concatenated"].includes(stage)
      ? context.sizes.d_k : null,
    label: `${context.t(`stage.${stage}.name`)}${head === null ? "" : ", " + context.t("page.head", { head: head })}`,
  });
}

// A trained head's role and its measure, in the page's language ("" for untrained heads).
function roleLabel(context, head) {
  const roles = context.trace.roles;
  if (!roles) return "";
  return roles[head].label[context.state.lang] || roles[head].label.en;
}

function headFigure(context, stage, head, cell, extra = {}) {
  const caption = [context.t("page.head", { head: head })];
  if (stage === "weights" && extra.entropy) {
    caption.push(context.t("page.entropy", { value: context.trace.entropy_bits[head].toFixed(2) }));
    if (context.trace.roles) caption.push(roleLabel(context, head));
  }
  const tag = extra.onclick ? "button" : "figure";
  return element(tag, { class: "head-figure", type: extra.onclick ? "button" : null, "data-role": extra.role || null,
    "data-head": head, "data-head-role": context.trace.roles ? context.trace.roles[head].role : null,
    onclick: extra.onclick || null,
    style: `border-top: 4px solid ${headColour(head)}` },
  stageMatrix(context, stage, head, cell, extra),
  element(extra.onclick ? "span" : "figcaption", { class: "caption", text: caption.join(" · ") }));
}

function renderGlobal(context) {
  const { D, H, T } = context.sizes;
  const cell = T > 8 ? 7 : 9;
  const arrow = () => element("span", { class: "arrow", "aria-hidden": "true", text: "\u2192" });
  const step = (card) => element("div", { class: "step" }, arrow(), card);
  const matrixBlock = (stage, note, labels) => element("div", { class: "block", "data-stage": stage },
    element("h3", { text: context.t(`stage.${stage}.name`) }), shapeLabel(context, stage),
    note ? element("span", { class: "shape", text: note }) : null,
    stageMatrix(context, stage, null, labels ? Math.max(cell + 3, 13) : cell, { labels }));
  const weight = (name) => `${name}: (D, D) = (${D}, ${D})`;
  // Column headings are formulas, the same in both languages; h numbers the head.
  const laneStages = { queries_split: "Q_h", keys_split: "K_h", values_split: "V_h",
    weights: "A_h = softmax(Q_h K_h\u1d40 / \u221ad_k)", head_outputs: "A_h V_h" };
  const header = element("tr", {}, element("th", { scope: "col", text: context.t("page.heads") }),
    Object.entries(laneStages).map(([stage, formula]) => element("th", { scope: "col" },
      element("span", { class: "formula", text: formula }), shapeLabel(context, stage))));
  const lanes = Array.from({ length: H }, (_, head) => element("tr", { "data-head": head },
    element("th", { scope: "row", style: `border-left: 4px solid ${headColour(head)}`,
      text: context.t("page.head", { head: head }) }),
    Object.keys(laneStages).map((stage) => element("td", {}, stage === "weights"
      ? element("button", { type: "button", class: "head-figure", "data-role": "global-head", "data-head": head,
        "data-key": `global-head-${head}`, title: context.t("mode.local.name"),
        onclick: () => context.update({ mode: "local", local: { head, query: context.state.local.query } }) },
        stageMatrix(context, stage, head, cell + 1, {}),
        element("span", { class: "caption", text: context.t("page.entropy",
          { value: context.trace.entropy_bits[head].toFixed(2) }) }),
        context.trace.roles ? element("span", { class: "caption role", text: roleLabel(context, head) }) : null)
      : stageMatrix(context, stage, head, cell, {})))));
  return [
    element("h2", { text: context.t("mode.global.name") }),
    element("p", { class: "about", text: context.t("mode.global.about") }),
    trainedNotes(context, "layer_inputs"),
    // each arrow travels with the block it points at, so a row that wraps never ends in an arrow
    element("div", { class: "flow pipeline" },
      element("div", { class: "card" }, matrixBlock("inputs", null, true)),
      step(element("div", { class: "card stack" }, matrixBlock("queries", weight("W_Q")),
        matrixBlock("keys", weight("W_K")), matrixBlock("values", weight("W_V")))),
      step(element("div", { class: "card" }, element("div", { class: "table-wrap" },
        element("table", { class: "lanes" }, element("thead", {}, header), element("tbody", {}, lanes))))),
      step(element("div", { class: "card" }, matrixBlock("concatenated", null, false))),
      step(element("div", { class: "card" }, matrixBlock("output", weight("W_O"), true)))),
    legend("unit", context.t("page.weight_scale")),
    legend("signed", context.t("page.signed_scale")),
  ];
}

// For the trained model's entries: what differs from the untrained pages (its layer's input, the mask).
function trainedNotes(context, ...keys) {
  if (context.entry.model !== "trained") return null;
  return element("div", { class: "trained-notes" }, keys.map((key) => element("p", { class: "about",
    "data-note": key, text: context.t(`trained.page.${key}`, { layer: context.entry.layer }) })));
}

function choiceGroup(name, label, count, current, text, onChoose) {
  return element("fieldset", { class: "control" }, element("legend", { text: label }),
    element("div", { class: "choices" }, Array.from({ length: count }, (_, index) => element("label", {},
      element("input", { type: "radio", name, value: index, checked: index === current, "data-key": `${name}-${index}`,
        onchange: () => onChoose(index) }),
      text(index)))));
}

function renderLocal(context) {
  const { head, query } = context.state.local;
  const stages = context.trace.stages;
  const d_k = context.sizes.d_k;
  const scores = stages.scores[head][query];
  const scaled = stages.scaled_scores[head][query];
  const weights = stages.weights[head][query];
  const values = stages.values_split[head];
  const output = stages.head_outputs[head][query];
  const vector = (numbers) => element("span", { class: "vector", text: `[${numbers.map((v) => formatNumber(v)).join(", ")}]` });
  const rows = context.tokens.map((token, key) => element("tr", { "data-key-index": key },
    element("td", { text: token }),
    element("td", { "data-column": "score", text: formatNumber(scores[key]) }),
    element("td", { "data-column": "scaled", text: scaled[key] === null
      ? `\u2212\u221e (${context.t("trained.page.masked")})` : formatNumber(scaled[key]) }),
    element("td", { "data-column": "weight" }, formatNumber(weights[key]),
      element("span", { class: "weight-bar", style: `width: ${(weights[key] * 4).toFixed(2)}rem` })),
    element("td", {}, vector(values[key]))));
  const total = weights.reduce((sum, value) => sum + value, 0);
  return [
    element("h2", { text: context.t("mode.local.name") }),
    element("p", { class: "about", text: context.t("mode.local.about") }),
    trainedNotes(context, "mask_note"),
    element("div", { class: "picker" },
      choiceGroup("local-head", context.t("mode.local.pick_head"), context.sizes.H, head,
        (index) => String(index), (index) => context.update({ local: { head: index, query } })),  // heads from 0
      choiceGroup("local-query", context.t("mode.local.pick_query"), context.tokens.length, query,
        (index) => context.tokens[index], (index) => context.update({ local: { head, query: index } }))),
    element("div", { class: "flow" },
      element("div", { class: "card" }, heatmap(stages.weights[head], { rows: context.tokens, columns: context.tokens,
        scale: "unit", cell: 30, annotate: true, highlightRow: query,
        label: `${context.t("stage.weights.name")}, ${context.t("page.head", { head: head })}` })),
      element("div", { class: "card" },
        element("h3", {}, `q (${context.t("page.query")} \u201c${context.tokens[query]}\u201d)`),
        element("p", { id: "local-query-vector" }, vector(stages.queries_split[head][query])),
        element("p", { id: "local-scale-note", text: context.t("mode.local.scale_note",
          { d_k, root: formatNumber(Math.sqrt(d_k)) }) }))),
    element("div", { class: "table-wrap" }, element("table", { id: "local-table" },
      element("thead", {}, element("tr", {},
        ["column_key", "column_score", "column_scaled", "column_weight"].map((key) =>
          element("th", { scope: "col", text: context.t(`mode.local.${key}`) })),
        element("th", { scope: "col", text: "v" }))),
      element("tbody", {}, rows),
      element("tfoot", {}, element("tr", {}, element("td", { text: context.t("mode.local.total") }),
        element("td"), element("td"), element("td", { "data-column": "weight-total", text: formatNumber(total) }),
        element("td"))))),
    element("h3", { text: context.t("mode.local.output", { d_k }) }),
    element("p", { id: "local-output" }, vector(output)),
  ];
}

function renderDynamicStage(context, step) {
  const stage = context.steps[step];
  return element("div", { class: "stage-view", "data-stage": stage },
    element("h3", { id: "dynamic-stage-name", text: context.t(`stage.${stage}.name`) }),
    shapeLabel(context, stage),
    element("p", { class: "about", text: context.t(`stage.${stage}.about`) }),
    stage === "inputs" ? trainedNotes(context, "layer_inputs") : null,
    stage === "scaled_scores" || stage === "weights" ? trainedNotes(context, "mask_note") : null,
    PER_HEAD(context.axes[stage])
      ? element("div", { class: "heads-row" }, Array.from({ length: context.sizes.H },
        (_, head) => headFigure(context, stage, head, context.sizes.H > 4 ? 12 : 18,
          { labels: context.sizes.H <= 4, entropy: true })))
      : stageMatrix(context, stage, null, 20, { labels: true }));
}

function renderDynamic(context) {
  const { step, playing, speed } = context.state.dynamic;
  const total = context.steps.length;
  const speeds = [0.5, 1, 2, 4];
  return [
    element("h2", { text: context.t("mode.dynamic.name") }),
    element("p", { class: "about", text: context.t("mode.dynamic.about") }),
    element("div", { class: "player" },
      element("button", { type: "button", id: "step-back", "data-key": "step-back", disabled: step === 0,
        "aria-label": context.t("mode.dynamic.back"), onclick: () => context.step(-1) }, "\u2039 ", context.t("mode.dynamic.back")),
      element("button", { type: "button", id: "play", "data-key": "play", "aria-pressed": String(playing),
        onclick: () => context.togglePlay() }, playing ? "\u2016 " + context.t("mode.dynamic.pause") : "\u25b6 " + context.t("mode.dynamic.play")),
      element("button", { type: "button", id: "step-forward", "data-key": "step-forward", disabled: step === total - 1,
        "aria-label": context.t("mode.dynamic.forward"), onclick: () => context.step(1) }, context.t("mode.dynamic.forward"), " \u203a"),
      element("label", {}, context.t("mode.dynamic.speed"), " ",
        element("select", { id: "speed", "data-key": "speed", onchange: (event) => context.setSpeed(Number(event.target.value)) },
          speeds.map((value) => element("option", { value, selected: value === speed, text: `${value}\u00d7` })))),
      element("span", { id: "step-counter", role: "status", "aria-live": "polite",
        text: context.t("mode.dynamic.counter", { step: step + 1, total }) })),
    element("div", { class: "progress", "aria-hidden": "true" },
      element("div", { style: `width: ${((step + 1) / total * 100).toFixed(1)}%` })),
    element("ol", { class: "steps" }, context.steps.map((stage, index) => element("li", {},
      element("button", { type: "button", "data-key": `goto-${index}`, "aria-current": index === step ? "step" : null,
        onclick: () => context.goTo(index) }, `${index + 1}. ${context.t(`stage.${stage}.name`)}`)))),
    renderDynamicStage(context, step),
  ];
}

function renderStatic(context) {
  return [
    element("h2", { text: context.t("mode.static.name") }),
    element("p", { class: "about", text: context.t("mode.static.about") }),
    element("div", { class: "player" },
      element("button", { type: "button", class: "print", onclick: () => window.print() }, context.t("mode.static.print")),
      shapeLabel(context, "weights")),
    legend("unit", context.t("page.weight_scale")),
    element("div", { class: "static-grid" }, Array.from({ length: context.sizes.H }, (_, head) =>
      headFigure(context, "weights", head, context.tokens.length > 8 ? 20 : context.tokens.length > 6 ? 28 : 38,
        { role: "heatmap", labels: true, entropy: true, annotate: context.tokens.length <= 6 }))),
  ];
}

const VIEWS = { global: renderGlobal, local: renderLocal, dynamic: renderDynamic, static: renderStatic };
