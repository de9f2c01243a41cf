"use strict";
// The explainer's controller: reads the embedded data, keeps the state, wires the controls.

const DATA = JSON.parse(document.getElementById("mha-data").textContent);
const MODES = ["global", "local", "dynamic", "static"];
const BASE_STEP_MILLISECONDS = 2000;

const state = {
  sentence: 0,
  heads: DATA.heads,
  lang: DATA.lang,
  mode: "global",
  local: { head: 0, query: 0 },
  dynamic: { step: 0, playing: false, speed: 1 },
};
let timer = null;

function text(key, fields = {}) {
  const entry = DATA.texts[key];
  if (!entry) throw new Error(`missing text ${key}`);
  return (entry[state.lang] || entry.en).replace(/\{(\w+)\}/g, (match, name) =>
    name in fields ? String(fields[name]) : match);
}

function currentEntry() {
  return DATA.sentences[state.sentence];
}

// The trained model's entries offer only the head count it was trained with.
function headOptions(entry = currentEntry()) {
  return entry.head_options || DATA.head_options;
}

function currentTrace() {
  return currentEntry().traces[String(state.heads)];
}

function stageLimits(trace) {
  const limits = {};
  for (const [name, values] of Object.entries(trace.stages)) limits[name] = largestMagnitude(values) || 1;
  return limits;
}

function viewContext() {
  const trace = currentTrace();
  return {
    trace,
    entry: currentEntry(),
    tokens: currentEntry().tokens,
    sizes: trace.sizes,
    axes: DATA.stage_axes,
    steps: DATA.stage_order,
    limits: stageLimits(trace),
    state,
    t: text,
    update,
    step: (delta) => goTo(state.dynamic.step + delta),
    goTo,
    togglePlay,
    setSpeed: (speed) => { state.dynamic.speed = speed; if (state.dynamic.playing) startTimer(); },
  };
}

function update(patch) {
  Object.assign(state, patch);
  if (!headOptions().includes(state.heads)) state.heads = headOptions()[0];
  const trace = currentTrace();
  state.local.head = Math.min(state.local.head, trace.sizes.H - 1);
  state.local.query = Math.min(state.local.query, trace.sizes.T - 1);
  if (state.mode !== "dynamic") stopTimer();
  render();
}

function goTo(step) {
  const last = DATA.stage_order.length - 1;
  state.dynamic.step = Math.max(0, Math.min(last, step));
  if (state.dynamic.step === last) stopTimer();
  render();
}

function togglePlay() {
  if (state.dynamic.playing) {
    stopTimer();
  } else {
    if (state.dynamic.step === DATA.stage_order.length - 1) state.dynamic.step = 0;
    state.dynamic.playing = true;
    startTimer();
  }
  render();
}

function startTimer() {
  clearInterval(timer);
  timer = setInterval(() => goTo(state.dynamic.step + 1), BASE_STEP_MILLISECONDS / state.dynamic.speed);
}

function stopTimer() {
  clearInterval(timer);
  timer = null;
  state.dynamic.playing = false;
}

// Re-rendering replaces elements; keep keyboard focus on the control that had it.
function render() {
  const focusedKey = document.activeElement && document.activeElement.dataset
    ? document.activeElement.dataset.key : undefined;
  renderChrome();
  const context = viewContext();
  for (const mode of MODES) {
    const panel = document.getElementById(`panel-${mode}`);
    const tab = document.getElementById(`tab-${mode}`);
    const active = mode === state.mode;
    tab.setAttribute("aria-selected", String(active));
    tab.tabIndex = active ? 0 : -1;
    panel.hidden = !active;
    // a view leaves out what does not apply (null): replaceChildren would write it as the text "null"
    panel.replaceChildren(...(active ? VIEWS[mode](context) : []).filter((part) => part !== null && part !== undefined));
  }
  if (focusedKey) {
    const again = document.querySelector(`[data-key="${focusedKey}"]`);
    if (again && !again.disabled) again.focus();
    else document.getElementById(`panel-${state.mode}`).focus();
  }
}

function renderChrome() {
  document.documentElement.lang = state.lang === "zh" ? "zh-Hans" : "en";
  document.title = text("page.title");
  for (const node of document.querySelectorAll("[data-t]")) node.textContent = text(node.dataset.t);
  for (const button of document.querySelectorAll("button.language")) {
    button.setAttribute("aria-pressed", String(button.dataset.lang === state.lang));
  }
  const entry = currentEntry();
  const select = document.getElementById("sentence");
  DATA.sentences.forEach((each, index) => {
    if (each.label) select.options[index].textContent = each.label[state.lang] || each.label.en;
  });
  select.value = String(state.sentence);
  for (const input of document.querySelectorAll('input[name="heads"]')) {
    input.checked = Number(input.value) === state.heads;
    input.disabled = !headOptions().includes(Number(input.value));
  }
  const trained = entry.model === "trained";
  document.getElementById("intro").textContent = text(trained ? "trained.page.intro" : "page.intro");
  if (trained) {
    document.getElementById("heads-why").textContent = text("trained.page.heads_fixed", {
      heads: state.heads, d_k: entry.d_model / state.heads, d_model: entry.d_model });
    document.getElementById("footer").textContent = text("trained.page.footer", entry.training);
  } else {
    const d = DATA.d_model;
    const example = DATA.non_divisor_example;
    document.getElementById("heads-why").textContent = text("page.heads_why", {
      d_model: d, divisors: DATA.head_options.join(", "), example, fraction: (d / example).toFixed(2) });
    document.getElementById("footer").textContent = text("page.footer", { seed: DATA.seed });
  }
}

function buildControls() {
  const select = document.getElementById("sentence");
  DATA.sentences.forEach((entry, index) => select.append(element("option", { value: index, text: entry.text,
    "data-model": entry.model || null })));
  select.addEventListener("change", () => update({ sentence: Number(select.value) }));
  const choices = document.getElementById("head-choices");
  const counts = new Set(DATA.head_options);
  for (const entry of DATA.sentences) for (const count of entry.head_options || []) counts.add(count);
  for (const count of [...counts].sort((a, b) => a - b)) {
    choices.append(element("label", {}, element("input", { type: "radio", name: "heads", value: count,
      "data-key": `heads-${count}`, onchange: () => update({ heads: count }) }), String(count)));
  }
  for (const button of document.querySelectorAll("button.language")) {
    button.addEventListener("click", () => update({ lang: button.dataset.lang }));
  }
  const tabs = [...document.querySelectorAll('[role="tab"]')];
  for (const tab of tabs) {
    tab.addEventListener("click", (event) => {
      update({ mode: tab.dataset.mode });
      // a click on the Dynamic tab lands in its panel, where the arrow keys step (as the panel says);
      // from the keyboard (detail 0) the focus stays on the tab, where the arrows move between tabs
      if (tab.dataset.mode === "dynamic" && event.detail > 0) document.getElementById("panel-dynamic").focus();
    });
    // Arrow keys move between tabs (the usual tablist pattern); Home and End jump.
    tab.addEventListener("keydown", (event) => {
      const index = tabs.indexOf(tab);
      const moves = { ArrowRight: index + 1, ArrowLeft: index - 1, Home: 0, End: tabs.length - 1 };
      if (!(event.key in moves)) return;
      event.preventDefault();
      const next = tabs[(moves[event.key] + tabs.length) % tabs.length];
      update({ mode: next.dataset.mode });
      next.focus();
    });
  }
  document.getElementById("panel-dynamic").addEventListener("keydown", (event) => {
    if (event.target.tagName === "SELECT" || event.target.tagName === "INPUT") return;
    const moves = { ArrowRight: 1, ArrowLeft: -1 };
    if (event.key in moves) {
      event.preventDefault();
      goTo(state.dynamic.step + moves[event.key]);
    } else if (event.key === "Home" || event.key === "End") {
      event.preventDefault();
      goTo(event.key === "Home" ? 0 : DATA.stage_order.length - 1);
    } else if (event.key === " " && event.target.id === "panel-dynamic") {
      event.preventDefault();
      togglePlay();
    }
  });
}

buildControls();
render();
