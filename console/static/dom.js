// dom.js: the one way the console builds its page. Every text, above all
// every value that came from the API, goes in through textContent or an
// attribute, never through an HTML parser: the page's Content-Security-
// Policy (require-trusted-types-for) makes the browser refuse HTML strings.

const SVG = "http://www.w3.org/2000/svg";

// h makes an element: h("button", {class: "x", onclick: fn}, "text", child).
// Attributes named on* become event listeners; strings and numbers become
// text nodes; null, undefined and false children are skipped.
export function h(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

// s is h for SVG elements (the charts).
export function s(tag, attrs, ...children) {
  return build(document.createElementNS(SVG, tag), attrs, children);
}

function build(el, attrs, children) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "value") el.value = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// replace empties el and fills it with children.
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// field is a labelled input; the input is returned as .input.
export function field(label, attrs) {
  const input = h("input", attrs);
  const el = h("label", { class: "field" }, h("span", {}, label), input);
  el.input = input;
  return el;
}

// copyButton copies text to the clipboard and says so on the button.
export function copyButton(text, what) {
  const b = h("button", { type: "button", class: "small", "aria-label": "Copy " + what }, "Copy");
  b.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(text);
      b.textContent = "Copied";
    } catch {
      b.textContent = "Select and copy";
    }
    setTimeout(() => { b.textContent = "Copy"; }, 1500);
  });
  return b;
}

// bar is a usage bar: used of limit (0: no limit), with its figures.
export function bar(used, limit, unit) {
  const pct = limit > 0 ? Math.min(100, (used / limit) * 100) : 0;
  const fill = h("div", { class: "fill" + (pct >= 90 ? " full" : pct >= 80 ? " warn" : "") });
  // CSSOM, not a style attribute: the policy allows no inline styles.
  fill.style.width = pct.toFixed(1) + "%";
  return h("div", { class: "usage" },
    h("div", {
      class: "bar", role: "progressbar", "aria-valuemin": 0, "aria-valuemax": 100,
      "aria-valuenow": Math.round(pct), "aria-label": "Storage used",
    }, fill),
    h("span", { class: "figures" },
      limit > 0 ? `${fmt(used)} of ${fmt(limit)} ${unit} (${Math.round(pct)}%)` : `${fmt(used)} ${unit}, no limit`));
}

// fmt writes a number with at most two decimals.
export function fmt(n) {
  return Number(n).toLocaleString("en-US", { maximumFractionDigits: 2 });
}
