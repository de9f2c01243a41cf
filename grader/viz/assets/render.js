"use strict";
// Drawing helpers of the explainer: elements, colour scales, heatmaps, numbers.
// Shape legend: B batch, H heads, T query length, S key length, D width, d_k = D / H.

const SVG_NAMESPACE = "http://www.w3.org/2000/svg";

// Viridis at eleven evenly spaced points: perceptually uniform and colour-blind-safe.
const VIRIDIS = ["#440154", "#482475", "#414487", "#355f8d", "#2a788e", "#21918c",
  "#22a884", "#44bf70", "#7ad151", "#bddf26", "#fde725"];
// Purple - white - orange: a diverging scale that stays distinct with colour-vision deficiency.
const NEGATIVE = [84, 39, 136];
const MIDDLE = [247, 247, 247];
const POSITIVE = [179, 88, 6];
// Okabe-Ito colours, to tell heads apart in bands and borders.
const MASKED_COLOUR = "#bbbbbb";
const HEAD_COLOURS = ["#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442", "#000000"];

function element(tag, attributes, ...children) {
  return build(document.createElement(tag), attributes, children);
}

function svgElement(tag, attributes, ...children) {
  return build(document.createElementNS(SVG_NAMESPACE, tag), attributes, children);
}

function build(node, attributes, children) {
  for (const [name, value] of Object.entries(attributes || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "text") node.textContent = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function hexToRgb(hex) {
  return [1, 3, 5].map((start) => parseInt(hex.slice(start, start + 2), 16));
}

function mix(from, to, amount) {
  const channels = from.map((value, index) => Math.round(value + (to[index] - value) * amount));
  return `rgb(${channels.join(",")})`;
}

function unitColour(value) {
  const clamped = Math.min(1, Math.max(0, Number.isFinite(value) ? value : 0));
  const position = clamped * (VIRIDIS.length - 1);
  const low = Math.floor(position);
  const high = Math.min(VIRIDIS.length - 1, low + 1);
  return mix(hexToRgb(VIRIDIS[low]), hexToRgb(VIRIDIS[high]), position - low);
}

function signedColour(value, limit) {
  const amount = Math.min(1, Math.abs(value) / (limit || 1));
  return mix(MIDDLE, value < 0 ? NEGATIVE : POSITIVE, amount);
}

function unitTextColour(value) {
  return value > 0.55 ? "#000000" : "#ffffff";  // dark text on the bright end of viridis
}

function headColour(head) {
  return HEAD_COLOURS[head % HEAD_COLOURS.length];
}

function formatNumber(value, digits = 3) {
  const text = value.toFixed(digits);
  return text.startsWith("-") ? "\u2212" + text.slice(1) : text;  // a true minus sign
}

function largestMagnitude(values) {
  let largest = 0;
  for (const value of values.flat(Infinity)) largest = Math.max(largest, Math.abs(value));
  return largest;
}

const LABEL_SIZE = 11;  // pixels, token labels of a heatmap
const LABEL_COLOUR = "#1b1b1f";

function labelWidth(labels) {
  // CJK characters are about twice as wide as Latin ones at the same size.
  const units = Math.max(0, ...labels.map((label) => [...label].reduce(
    (sum, character) => sum + (character.charCodeAt(0) > 0x2e80 ? 2 : 1), 0)));
  return units ? Math.ceil(units * LABEL_SIZE * 0.6) + 8 : 0;
}

// A matrix as an SVG heatmap. options: rows/columns (labels or null), scale ("unit" for
// weights in [0, 1], "signed" for anything else), limit (signed scale's half-range),
// cell (pixels), annotate (print values), label (for screen readers), bands (head width
// d_k: colour the column groups of each head), highlightRow (outline one row).
function heatmap(matrix, options) {
  const rowLabels = options.rows || null;
  const columnLabels = options.columns || null;
  const cell = options.cell || 14;
  const left = rowLabels ? labelWidth(rowLabels) : 0;
  const columnSpan = columnLabels ? labelWidth(columnLabels) : 0;
  // Column labels are turned 60 degrees: they rise by sin 60 and lean right by cos 60 of their length.
  const top = columnLabels ? Math.ceil(columnSpan * 0.87) + 4 : (options.bands ? 5 : 0);
  const height = matrix.length;
  const width = matrix[0].length;
  const limit = options.limit || largestMagnitude(matrix) || 1;
  const totalWidth = left + width * cell + 1 + Math.ceil(columnSpan * 0.5);
  const totalHeight = top + height * cell + 1;
  const svg = svgElement("svg", {
    viewBox: `0 0 ${totalWidth} ${totalHeight}`, width: totalWidth, height: totalHeight,
    role: "img", "aria-label": options.label, "data-rows": height, "data-columns": width,
  });
  if (options.bands) {
    for (let start = 0, head = 0; start < width; start += options.bands, head += 1) {
      svg.append(svgElement("rect", { x: left + start * cell, y: 0, width: options.bands * cell,
        height: 4, fill: headColour(head) }));
    }
  }
  matrix.forEach((row, rowIndex) => row.forEach((value, columnIndex) => {
    // null: a score the causal mask removed before the softmax (the trained model's pages).
    const masked = value === null;
    const fill = masked ? MASKED_COLOUR : options.scale === "unit" ? unitColour(value) : signedColour(value, limit);
    svg.append(svgElement("rect", { x: left + columnIndex * cell, y: top + rowIndex * cell,
      width: cell, height: cell, fill, "data-masked": masked || null },
    svgElement("title", { text: masked ? "\u2212\u221e" : formatNumber(value) })));
    if (options.annotate && !masked) {
      svg.append(svgElement("text", { x: left + (columnIndex + 0.5) * cell, y: top + (rowIndex + 0.5) * cell,
        "text-anchor": "middle", "dominant-baseline": "central", "font-size": Math.max(7, cell / 3.4).toFixed(1),
        fill: options.scale === "unit" ? unitTextColour(value) : "#000000",
        text: value.toFixed(2) }));
    }
  }));
  (rowLabels || []).forEach((label, index) => svg.append(svgElement("text", {
    x: left - 4, y: top + (index + 0.5) * cell, "text-anchor": "end", "dominant-baseline": "central",
    "font-size": LABEL_SIZE, fill: LABEL_COLOUR, text: label })));
  (columnLabels || []).forEach((label, index) => svg.append(svgElement("text", {
    transform: `translate(${left + (index + 0.5) * cell},${top - 4}) rotate(-60)`,
    "dominant-baseline": "central", "font-size": LABEL_SIZE, fill: LABEL_COLOUR, text: label })));
  if (options.highlightRow !== undefined) {
    svg.append(svgElement("rect", { x: left, y: top + options.highlightRow * cell, width: width * cell,
      height: cell, fill: "none", stroke: "#e69f00", "stroke-width": 2.5 }));
  }
  return svg;
}

function legend(scale, text) {
  const stops = scale === "unit"
    ? VIRIDIS.join(", ")
    : `rgb(${NEGATIVE}), rgb(${MIDDLE}), rgb(${POSITIVE})`;
  return element("div", { class: "legend" },
    element("span", { class: "bar", style: `background: linear-gradient(to right, ${stops})` }),
    element("span", { text }));
}
