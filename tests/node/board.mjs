/* Replays the board's golden vectors tests/test_site_board.py writes (twins.json, board.json, referee.f32 in the folder
 * given) through app/site/js/board.js, with no ONNX and no browser: the referee's perplexity of each (prompt, answer)
 * over the logits Python's referee gave (the referee asked for the very sequence Python scored; rows it should not
 * read are NaN, so reading another position shows), each side's row from a race's frames, and each table's cells and
 * what-to-notice line from rows. Exits 1 naming the first case that differs; else prints how many it checked.
 *   node tests/node/board.mjs FOLDER
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Tokenizer } from "../../app/site/js/tokenizer.js";
import { perplexity, sideRow, cells, note, openings } from "../../app/site/js/board.js";

const folder = process.argv[2];
const data = JSON.parse(readFileSync(join(folder, "twins.json"), "utf8"));
const golden = JSON.parse(readFileSync(join(folder, "board.json"), "utf8"));
const bytes = readFileSync(join(folder, "referee.f32"));
const blob = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
const V = data.config.referee.vocab_size, tok = new Tokenizer(data.tokenizer), eos = data.tokenizer.eos_id;
const TOLERANCE = 1e-9;  // relative: the logits are Python's own, so only exp and log may differ, in the last bits

class Differs extends Error {}
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

/* a referee that hands back Python's logits for the one sequence Python scored, NaN in the rows it did not read */
function replaying(c) {
  return {V, forward: async (ids) => {
    if (!same(ids, c.ids)) {
      throw new Differs(`referee ${JSON.stringify([c.prompt, c.answer])}: JavaScript scored ${JSON.stringify(ids)}, ` +
                        `Python ${JSON.stringify(c.ids)}`);
    }
    const out = new Float32Array(ids.length * V).fill(NaN);
    out.set(blob.subarray(c.offset, c.offset + c.rows * V), c.first * V);
    return out;
  }};
}

async function score(prompt, answer) {
  const c = golden.referee.find((r) => r.prompt === prompt && r.answer === answer);
  if (!c) throw new Differs(`no Python perplexity for ${JSON.stringify([prompt, answer])}: the answer differs`);
  return perplexity(replaying(c), tok, eos, prompt, answer);
}

let checked = 0;
try {
  for (const c of golden.referee) {
    const got = await score(c.prompt, c.answer);
    const off = c.ppl === null ? got !== null : !(Math.abs(got - c.ppl) <= TOLERANCE * c.ppl);
    if (off) throw new Differs(`referee ${JSON.stringify([c.prompt, c.answer])}: perplexity ${got} here, ${c.ppl} in Python`);
    checked++;
  }
  for (const c of golden.sides) {
    const got = await sideRow(c.index, c.label, c.prompt, c.frames, data.analysis, score);
    for (const k of Object.keys(c.row)) {
      if (!same(got[k], c.row[k])) {
        throw new Differs(`opening ${c.index}, ${c.label}: its ${k} is ${JSON.stringify(got[k])} here, ` +
                          `${JSON.stringify(c.row[k])} in Python`);
      }
    }
    checked++;
  }
  for (const [n, c] of golden.tables.entries()) {
    const shown = c.rows.map((r) => cells(r, data.board)), line = note(c.rows, data.board);
    if (!same(shown, c.cells)) throw new Differs(`table ${n}: cells ${JSON.stringify(shown)} here, ${JSON.stringify(c.cells)} in Python`);
    if (line !== c.note) throw new Differs(`table ${n}: the note says\n  ${line}\nhere, and in Python\n  ${c.note}`);
    checked++;
  }
  for (const [numbers, named] of golden.openings) {
    if (openings(numbers) !== named) throw new Differs(`openings ${JSON.stringify(numbers)}: ${openings(numbers)} here, ${named} in Python`);
    checked++;
  }
} catch (e) {
  console.log(e instanceof Differs ? e.message : e.stack);
  process.exit(1);
}
console.log(`checked ${checked} cases, every perplexity, row, cell and note equal`);
