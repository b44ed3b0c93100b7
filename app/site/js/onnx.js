/* The twins' network in the browser: one ONNX graph per twin (app/site/graph.py) run by onnxruntime-web, its
 * key/value cache carried between passes, offered as Python's models offer theirs to the samplers (MaskedLM refresh
 * and logits, CausalLM prefill and decode), so app/site/js/diffusion.js and autoregressive.js run over it or over
 * recorded logits alike, and the referee's whole-sequence pass (`forward`). `load` reads twins.json and both graphs from
 * a source (the folder's files, or the single file's inlined ones), the referee's graph only when a board asks.
 */
import { row } from "./sampling.js";
import { twinsOf } from "./twins.js";

var queue = Promise.resolve();  // one pass at a time: the two sides take turns on the one WebAssembly thread

/* a twin's graph: `eos` starts every sequence, as the Python models' inputs start */
export function Net(ort, session, config, eos) {
  this.ort = ort; this.session = session; this.V = config.vocab_size; this.eos = eos;
  var h = config.n_head, d = config.n_embd / config.n_head;
  this.empty = new ort.Tensor("float32", new Float32Array(0), [config.n_layer, h, 0, d]);
}

/* one call of the graph: `ids` from position `pos0` on, after the cache's keys and values */
Net.prototype.run = function (ids, pos0, cache) {
  var self = this, ort = this.ort;
  var job = queue.then(function () {
    var past = cache || {k: self.empty, v: self.empty};
    var feed = {ids: new ort.Tensor("int64", BigInt64Array.from(ids, BigInt), [ids.length]),
                pos0: new ort.Tensor("int64", BigInt64Array.of(BigInt(pos0)), []), past_k: past.k, past_v: past.v};
    return self.session.run(feed).then(function (out) {
      return {logits: out.logits.data, k: out.present_k, v: out.present_v};
    });
  });
  queue = job.catch(function () {});
  return job;
};

/* `count` rows of a pass's logits from row `first` */
Net.prototype.rows = function (out, first, count) {
  var rows = [];
  for (var r = 0; r < count; r++) rows.push(row(out.logits, first + r, this.V));
  return rows;
};

/* MaskedLM.refresh: the whole sequence in one pass, its cache and the rows from `start` on */
Net.prototype.refresh = async function (view, start) {
  var out = await this.run([this.eos].concat(view), 0, null);
  return {cache: {k: out.k, v: out.v}, logits: this.rows(out, start, view.length - start)};
};

/* MaskedLM.logits: the rows from `start` to `stop` (null: the end); without a cache the whole sequence, with it
   from the last prefix token on, the rest read from the cache (with `stop`, DualCache: the block's keys and values
   replace theirs in it) */
Net.prototype.logits = async function (view, cache, start, stop) {
  var seq = [this.eos].concat(view), out;
  if (!cache) {
    out = await this.run(seq, 0, null);
    return {cache: null, logits: this.rows(out, start, view.length - start)};
  }
  if (stop !== null) {
    out = await this.run(seq.slice(start, stop + 1), start, cache);
    return {cache: {k: out.k, v: out.v}, logits: this.rows(out, 0, stop - start)};
  }
  out = await this.run(seq.slice(start), start, cache);
  return {cache: cache, logits: this.rows(out, 0, view.length - start)};
};

/* the whole of `ids` from position 0 with no cache: every row's logits (T x V), as `forward` gives them (the
   referee's one pass over a prompt and its answer) */
Net.prototype.forward = async function (ids) { return (await this.run(ids, 0, null)).logits; };

/* CausalLM.prefill: the prompt after end-of-text, its cache and the next token's logits */
Net.prototype.prefill = async function (prompt) {
  var out = await this.run([this.eos].concat(prompt), 0, null);
  return {cache: {k: out.k, v: out.v}, logits: row(out.logits, prompt.length, this.V)};
};

/* CausalLM.decode: one token through the cache */
Net.prototype.decode = async function (cache, token) {
  var out = await this.run([token], cache.k.dims[2], cache);
  return {cache: {k: out.k, v: out.v}, logits: row(out.logits, 0, this.V)};
};

/* the folder's files, from its address `base` */
export function fromFolder(base) {
  return {
    setup: function (ort) { ort.env.wasm.wasmPaths = new URL(base + "ort/", globalThis.document.baseURI).href; },
    json: function () { return fetch(base + "twins.json").then(function (r) { return r.json(); }); },
    graph: function (kind) { return Promise.resolve(base + kind + ".onnx"); }
  };
}

async function netOf(ort, source, data, kind) {
  var session = await ort.InferenceSession.create(await source.graph(kind), {executionProviders: ["wasm"]});
  return new Net(ort, session, data.config[kind], data.tokenizer.eos_id);
}

/* twins.json and both graphs from `source`, as app/site/js/twins.js `twinsOf` makes the twins, and `referee()`, which
   loads the referee's graph on its first call only (a board's: a race never fetches it) */
export async function load(ort, source) {
  ort.env.wasm.numThreads = 1;
  await source.setup(ort);
  var data = await source.json(), models = {}, judge = null;
  for (var kind of ["diffusion", "ar"]) models[kind] = await netOf(ort, source, data, kind);
  var loaded = twinsOf(data, models);
  loaded.referee = function () {
    if (!judge) {
      judge = netOf(ort, source, data, "referee");
      judge.catch(function () { judge = null; });  // a failed fetch is tried again by the next board
    }
    return judge;
  };
  return loaded;
}
