/* The single-file site's loader: hands race.js the runtime's glue and WebAssembly, the twins' graphs and twins.json
 * from gzip-compressed base64 blocks inlined in the page, so it races from file:// with no network. */
(function (global) {
  "use strict";
  function bytes(id) {
    var block = global.document.getElementById(id);
    if (!block) {  // the referee's graph (a board's): not carried, to keep the file small
      return Promise.reject(new Error("This single file does not carry " + id.slice(3) + ".onnx; the folder " +
                                      "python -m app site OUT builds does."));
    }
    var text = block.textContent.trim(), bin = atob(text);
    var out = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    var stream = new Blob([out]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).arrayBuffer();
  }
  global.CONVERGE_SOURCE = {
    setup: async function (ort) {
      var glue = new Blob([await bytes("cv-glue")], {type: "text/javascript"});
      ort.env.wasm.wasmPaths = {mjs: URL.createObjectURL(glue)};
      ort.env.wasm.wasmBinary = await bytes("cv-wasm");
    },
    json: async function () { return JSON.parse(new TextDecoder().decode(await bytes("cv-twins"))); },
    graph: async function (kind) { return new Uint8Array(await bytes("cv-" + kind)); }
  };
})(window);
