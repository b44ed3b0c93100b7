/* The tokenizer in the browser: byte-level BPE (app/engine/tokenizer.py's tokenizer.json, as twins.json exports it):
 * encode as the Python tokenizer does, decode to text, and each token's display string (a streamed UTF-8 decode).
 */

var PRETOKEN = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;
export var EOS_MARK = "<eos>";

/* ---- the tokenizer: byte-level BPE from app/engine/tokenizer.py's tokenizer.json, as the site exported it ---- */

export function Tokenizer(data) {
  this.bytes = data.bytes.map(function (b) { return Uint8Array.from(b); });
  this.vocab = new Map(data.pieces.map(function (p, i) { return [p, i]; }));
  this.ranks = new Map(data.merges.map(function (m, i) { return [m[0] + "\u0000" + m[1], i]; }));
  this.byteChar = data.byte_chars;
  this.utf8 = new TextEncoder();
}

Tokenizer.prototype.bpe = function (word) {
  var parts = Array.from(word);
  while (parts.length > 1) {
    var best = -1, rank = Infinity;
    for (var i = 0; i < parts.length - 1; i++) {
      var r = this.ranks.get(parts[i] + "\u0000" + parts[i + 1]);
      if (r !== undefined && r < rank) { rank = r; best = i; }
    }
    if (best < 0) break;
    parts.splice(best, 2, parts[best] + parts[best + 1]);
  }
  var vocab = this.vocab;
  return parts.map(function (p) { return vocab.get(p); });
};

Tokenizer.prototype.encode = function (text) {
  var out = [], self = this;
  (text.match(PRETOKEN) || []).forEach(function (piece) {
    var word = Array.from(self.utf8.encode(piece), function (b) { return self.byteChar[b]; }).join("");
    Array.prototype.push.apply(out, self.bpe(word));
  });
  return out;
};

Tokenizer.prototype.decode = function (ids) {
  var self = this, n = 0;
  ids.forEach(function (i) { n += self.bytes[i].length; });
  var all = new Uint8Array(n), at = 0;
  ids.forEach(function (i) { all.set(self.bytes[i], at); at += self.bytes[i].length; });
  return new TextDecoder("utf-8").decode(all);
};

Tokenizer.prototype.strings = function (ids) {
  var dec = new TextDecoder("utf-8"), self = this;
  return ids.map(function (i, k) { return dec.decode(self.bytes[i], {stream: k < ids.length - 1}); });
};
