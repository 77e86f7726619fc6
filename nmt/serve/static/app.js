// nmt serve's page: asks the JSON API for translations with their attention and draws each
// heatmap as SVG (source subwords across, target subwords down; the head average or one head).
// URLs are relative, so the page also works behind a reverse proxy under a sub-path.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const $ = (id) => document.getElementById(id);

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function svgElement(tag, attributes) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  return node;
}

function setStatus(message, isError) {
  $("status").textContent = message;
  $("status").classList.toggle("error", Boolean(isError));
}

// A server started with --api-key answers 401 until the page sends the key: ask for it once
// and keep it for this tab only.
const KEY_STORE = "nmt-api-key";

class KeyNeeded extends Error {}

// What one request may hold (GET translator/limits); longer inputs go in several requests.
let maxSentences = 64;

// The languages each model writes (GET translator/models): a model that writes several needs
// the one to write in every request, picked under "Into".
const targetLanguages = {};  // model id -> the languages it writes
const ownTarget = {};  // model id -> the language it writes by default (its first direction's)
const sourceLanguages = {};  // model id -> the languages it reads
const chainedLanguages = {};  // model id -> {language: the served model that writes it on}

// A request to the API with the key when one is kept; a 401 asks for the key and sends the
// request again, another error throws with the server's detail. The answer's response.
async function send(path, options) {
  const headers = Object.assign({}, options.headers);
  const key = sessionStorage.getItem(KEY_STORE);
  if (key) headers.Authorization = `Bearer ${key}`;
  const response = await fetch(path, Object.assign({}, options, { headers }));
  if (response.status === 401) {
    sessionStorage.removeItem(KEY_STORE);
    const entered = window.prompt(key ? "That API key was refused; enter the right one:"
      : "This server needs its API key:");
    if (!entered || !entered.trim()) throw new KeyNeeded();
    sessionStorage.setItem(KEY_STORE, entered.trim());
    return send(path, options);
  }
  if (!response.ok) {
    const data = await response.json().catch(() => null);
    const detail = data && data.detail;
    const text = Array.isArray(detail)
      ? detail.map((e) => `${e.loc.join(".")}: ${e.msg}`).join("; ")
      : detail || response.statusText;
    throw new Error(`${response.status}: ${text}`);
  }
  return response;
}

async function api(path, body) {
  const options = body === undefined ? {} : {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  };
  return (await send(path, options)).json();
}

async function loadModels() {
  $("enter-key").hidden = true;
  const models = await api("translator/models");
  const none = element("option", "", "none");
  none.value = "";
  $("model-a").replaceChildren();
  $("model-b").replaceChildren(none);
  const limits = await api("translator/limits");
  maxSentences = limits.max_sentences;
  $("file").accept = limits.file_formats.flatMap((format) => format.extensions).join(",");
  for (const model of models) {
    const details = [model.decoder, model.attention];
    if (model.quantize) details.push(model.quantize);
    offer(model.model_id, model, details);
    // An adapter is offered as "MODEL+NAME": ids never hold "+" (request: id and adapter).
    for (const adapter of model.adapters) {
      offer(`${model.model_id}+${adapter.adapter}`, adapter, [`${adapter.type} adapter`]);
    }
  }
  showLanguages();
  setStatus(`${models.length} model${models.length === 1 ? "" : "s"} loaded`);
}

// One choice of the model pickers: a model, or an adapter on one (`served` says which
// languages it reads and writes).
function offer(value, served, details) {
  targetLanguages[value] = served.tgt_langs;
  ownTarget[value] = served.tgt_lang;
  sourceLanguages[value] = [...new Set(served.directions.map((d) => d.split("-")[0]))];
  chainedLanguages[value] = served.chains || {};
  const directions = served.directions.map((d) => d.replace("-", "→")).join(" ");
  const label = `${value} (${[directions, ...details].join(", ")})`;
  for (const id of ["model-a", "model-b"]) {
    const option = element("option", "", label);
    option.value = value;
    $(id).append(option);
  }
}

// What a picker's value asks for: a model id, and an adapter of it where it names one.
function route(value) {
  const [id, adapter] = value.split("+");
  return adapter ? { id, adapter } : { id };
}

// The "Into" picker lists the languages the chosen models reach, when one reaches several:
// those it writes, and those another served model writes on from its translations (a chain);
// the "From" picker the languages they read, when one reads several ("auto": read from the
// text). A pair the model never trained goes through a pivot language, and a chain through
// the language the two models meet in, shown under the translation. "Into" starts at the
// first model's own language (that of its first direction), whatever the others sort before.
function showLanguages(event) {
  const ids = [$("model-a").value, $("model-b").value].filter((id) => id);
  const own = ownTarget[$("model-a").value];
  const picked = event && event.target.id === "model-a" ? own : $("tgt-lang").value || own;
  fill("tgt-lang", languagesOf(ids, reachable()), [], picked);
  fill("src-lang", languagesOf(ids, sourceLanguages), ["auto"], $("src-lang").value);
}

function reachable() {
  const table = {};
  for (const id of Object.keys(targetLanguages)) {
    table[id] = [...targetLanguages[id], ...Object.keys(chainedLanguages[id] || {})];
  }
  return table;
}

function languagesOf(ids, table) {
  const several = ids.filter((id) => (table[id] || []).length > 1);
  return [...new Set(several.flatMap((id) => table[id]))].sort();
}

// `picked`: the option to select, where it is shown (else the first is).
function fill(id, languages, first, picked) {
  const select = $(id);
  const shown = languages.length ? [...first, ...languages] : [];
  select.replaceChildren(...shown.map((language) => {
    const option = element("option", "", language);
    option.value = language;
    return option;
  }));
  if (shown.includes(picked)) select.value = picked;
  $(`${id}-label`).hidden = languages.length === 0;
}

// A request's options for model `id`: the languages picked, where the model has several,
// and the model that writes on (then) where the language is a chain's.
function optionsFor(id, options) {
  const languages = reachable()[id] || [];
  const sources = sourceLanguages[id] || [];
  const chosen = Object.assign({}, options);
  if (sources.length > 1 && sources.includes($("src-lang").value)) {
    chosen.src_lang = $("src-lang").value;
  }
  if (languages.length < 2) return chosen;
  const language = $("tgt-lang").value;
  if (!languages.includes(language)) {
    throw new Error(`${id} reaches ${languages.join(", ")}, not ${language}: pick one of them`);
  }
  const then = targetLanguages[id].includes(language) ? {} : { then: chainedLanguages[id][language] };
  return Object.assign({ tgt_lang: language }, then, chosen);
}

async function translate() {
  // An earlier request's results must not stay under this one's error.
  $("results").replaceChildren();
  const lines = $("source").value.split("\n").map((l) => l.trim()).filter((l) => l);
  if (!lines.length) return setStatus("Type a sentence first.", true);
  $("translate").disabled = true;
  try {
    // No models yet: the key was missing or refused, so listing them asks for it again.
    if (!$("model-a").options.length) await loadModels();
    const ids = [$("model-a").value, $("model-b").value].filter((id) => id);
    const beam = parseInt($("beam").value, 10);
    setStatus("translating…");
    const started = performance.now();
    const options = beam > 0 ? { beam } : {};
    const best = await Promise.all(
      ids.map((id) => translateLines(id, lines, optionsFor(id, options))));
    const results = $("results");
    results.replaceChildren(...ids.map((id, i) => column(id, best[i])));
    results.classList.toggle("pair", ids.length === 2);
    setStatus(`done in ${Math.round(performance.now() - started)} ms`);
  } catch (error) {
    if (error instanceof KeyNeeded) keyNeeded();
    else setStatus(error.message, true);
  } finally {
    $("translate").disabled = false;
  }
}

// The best translation of every line, with its attention: the lines go in requests of at most
// maxSentences each, side by side.
async function translateLines(id, lines, options) {
  const requests = [];
  for (let start = 0; start < lines.length; start += maxSentences) {
    const items = lines.slice(start, start + maxSentences).map(
      (src) => Object.assign({ src, attention: true }, route(id), options));
    requests.push(api("translator/translate", items));
  }
  return (await Promise.all(requests)).flatMap((answer) => answer[0]);
}

function column(modelId, best) {
  // best[i]: the best translation of input line i, with its attention
  const node = element("section", "column");
  node.dataset.model = modelId;
  node.append(element("h2", "", modelId));
  const sentences = element("div", "sentences");
  const view = element("div", "attention");
  node.append(sentences, view);
  best.forEach((answer, index) => {
    const row = element("div", "sentence");
    row.append(labelled("source", "source", answer.src),
      labelled("translation", "translation", answer.tgt));
    if (answer.pivot) row.append(labelled("through", "pivot", answer.pivot));
    // pred_score null: the search found no translation for this line
    const score = answer.pred_score === null ? "no translation found"
      : `score ${answer.pred_score.toFixed(3)}`;
    const meta = element("div", "meta", `line ${index + 1} · ${score}`);
    if (answer.truncated) meta.append(element("span", "cut", " · source cut to the model's limit"));
    row.append(meta);
    row.addEventListener("click", () => select(index));
    sentences.append(row);
  });
  function select(index) {
    sentences.querySelectorAll(".sentence").forEach((row, i) =>
      row.classList.toggle("selected", i === index));
    const attention = best[index].attention;
    if (attention.tgt_tokens.length) showAttention(view, attention);
    else view.replaceChildren();
  }
  if (best.length) select(0);
  return node;
}

// One line of a result: a label ("source", "translation") beside the text.
function labelled(label, className, text) {
  const line = element("div", "line");
  line.append(element("span", "label", label), element("span", className, text));
  return line;
}

function showAttention(view, attention) {
  const heads = attention.weights.length;
  const buttons = element("div", "heads");
  const map = element("div", "map");
  const choices = [["average of heads", null]];
  if (heads > 1) for (let h = 0; h < heads; h++) choices.push([`head ${h + 1}`, h]);
  else choices[0][0] = "attention";
  choices.forEach(([label, head], i) => {
    const button = element("button", i === 0 ? "active" : "", label);
    button.type = "button";
    button.addEventListener("click", () => {
      buttons.querySelectorAll("button").forEach((b) => b.classList.remove("active"));
      button.classList.add("active");
      map.replaceChildren(heatmap(attention, head));
    });
    buttons.append(button);
  });
  map.append(heatmap(attention, null));
  view.replaceChildren(buttons, map);
}

function headAverage(weights) {
  // weights [H][T][S] -> [T][S]
  return weights[0].map((row, t) => row.map((_, s) =>
    weights.reduce((sum, head) => sum + head[t][s], 0) / weights.length));
}

function heatmap(attention, head) {
  const grid = head === null ? headAverage(attention.weights) : attention.weights[head];
  const src = attention.src_tokens;
  const tgt = attention.tgt_tokens;
  const cell = Math.max(14, Math.min(30, Math.floor(560 / Math.max(src.length, 1))));
  const charWidth = 7.5;
  const left = 12 + charWidth * Math.max(...tgt.map((t) => t.length), 3);
  const top = 12 + 0.75 * charWidth * Math.max(...src.map((t) => t.length), 3);
  const legendX = left + cell * src.length + 14;
  const width = legendX + 44;
  const height = Math.max(top + cell * tgt.length, top + 100) + 8;
  const svg = svgElement("svg", { class: "heatmap", width, height, viewBox: `0 0 ${width} ${height}` });
  svg.append(legend(legendX, top, Math.min(cell * tgt.length, 160)));
  src.forEach((token, s) => {
    const x = left + cell * s + cell / 2;
    const label = svgElement("text", {
      x, y: top - 6, transform: `rotate(-50 ${x} ${top - 6})`, "text-anchor": "start",
    });
    label.textContent = token;
    svg.append(label);
  });
  tgt.forEach((token, t) => {
    const label = svgElement("text", {
      x: left - 6, y: top + cell * t + cell / 2 + 4, "text-anchor": "end",
    });
    label.textContent = token;
    svg.append(label);
    grid[t].forEach((weight, s) => {
      const rect = svgElement("rect", {
        class: "cell", x: left + cell * s, y: top + cell * t, width: cell - 1, height: cell - 1,
        fill: colour(weight), "data-weight": weight.toFixed(4),
      });
      const text = `${src[s]} → ${token}: ${weight.toFixed(3)}`;
      const title = svgElement("title", {});
      title.textContent = text;
      rect.append(title);
      rect.addEventListener("mousemove", (event) => showTooltip(event, text));
      rect.addEventListener("mouseleave", hideTooltip);
      svg.append(rect);
    });
  });
  return svg;
}

let gradients = 0; // each SVG's gradient needs an id of its own on the page

function legend(x, y, height) {
  // a colour bar from weight 1 (top) to 0 (bottom)
  const id = `weight-scale-${++gradients}`;
  const gradient = svgElement("linearGradient", { id, x1: 0, y1: 1, x2: 0, y2: 0 });
  for (let i = 0; i <= 10; i++) {
    gradient.append(svgElement("stop", { offset: i / 10, "stop-color": colour(i / 10) }));
  }
  const defs = svgElement("defs", {});
  defs.append(gradient);
  const group = svgElement("g", { class: "legend" });
  const bar = svgElement("rect", { x, y, width: 10, height, fill: `url(#${id})`, stroke: "#d6dbe3" });
  group.append(defs, bar);
  [["1", y + 9], ["0", y + height]].forEach(([text, at]) => {
    const label = svgElement("text", { x: x + 14, y: at });
    label.textContent = text;
    group.append(label);
  });
  return group;
}

function colour(weight) {
  // white (0) to deep blue (1), through the page's accent
  const w = Math.min(1, Math.max(0, weight));
  const channel = (from, to) => Math.round(from + (to - from) * Math.sqrt(w));
  return `rgb(${channel(255, 16)}, ${channel(255, 52)}, ${channel(255, 140)})`;
}

function showTooltip(event, text) {
  const tip = $("tooltip");
  tip.textContent = text;
  tip.hidden = false;
  tip.style.left = `${event.clientX + 12}px`;
  tip.style.top = `${event.clientY + 12}px`;
}

function hideTooltip() {
  $("tooltip").hidden = true;
}

// A file goes to translate_file with the first model (and its "From" and "Into" choices);
// the answer is offered for download, and shown when it is text.
async function translateFile() {
  const file = $("file").files[0];
  if (!file) return setStatus("Choose a file first.", true);
  $("translate-file").disabled = true;
  try {
    if (!$("model-a").options.length) await loadModels();
    const id = $("model-a").value;
    const options = optionsFor(id, {});
    if (options.then) {
      throw new Error(`a file goes through one model: pick a language ${id} writes itself`);
    }
    const form = new FormData();
    form.append("file", file);
    const asked = route(id);
    form.append("id", asked.id);
    if (asked.adapter) form.append("adapter", asked.adapter);
    for (const name of ["tgt_lang", "src_lang"]) {
      if (options[name]) form.append(name, options[name]);
    }
    setStatus(`translating ${file.name}…`);
    const started = performance.now();
    const response = await send("translate_file", { method: "POST", body: form });
    const blob = await response.blob();
    const disposition = response.headers.get("Content-Disposition") || "";
    const named = /filename\*=UTF-8''([^;]+)/.exec(disposition);
    const name = named ? decodeURIComponent(named[1]) : file.name;
    const link = $("download");
    if (link.href) URL.revokeObjectURL(link.href);
    link.href = URL.createObjectURL(blob);
    link.download = name;
    link.textContent = `Download ${name}`;
    link.hidden = false;
    const text = /^text\/|xml|subrip/.test(blob.type);
    $("file-result").textContent = text ? await blob.text() : "";
    $("file-result").hidden = !text;
    setStatus(`${file.name} translated in ${Math.round(performance.now() - started)} ms`);
  } catch (error) {
    if (error instanceof KeyNeeded) keyNeeded();
    else setStatus(error.message, true);
  } finally {
    $("translate-file").disabled = false;
  }
}

function keyNeeded() {
  setStatus("This server needs its API key (ask whoever runs it); then press Enter API key "
    + "or Translate.", true);
  $("enter-key").hidden = false;
}

function start() {
  loadModels().catch((error) => {
    if (error instanceof KeyNeeded) keyNeeded();
    else setStatus(`cannot list models: ${error.message}`, true);
  });
}

document.addEventListener("DOMContentLoaded", () => {
  $("translate").addEventListener("click", translate);
  $("translate-file").addEventListener("click", translateFile);
  // a file dropped anywhere on the page is the one to translate
  document.addEventListener("dragover", (event) => event.preventDefault());
  document.addEventListener("drop", (event) => {
    event.preventDefault();
    if (!event.dataTransfer.files.length) return;
    $("file").files = event.dataTransfer.files;
    translateFile();
  });
  $("model-a").addEventListener("change", showLanguages);
  $("model-b").addEventListener("change", showLanguages);
  $("enter-key").addEventListener("click", start);
  $("source").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) translate();
  });
  start();
});
