/* numpy's np.random.default_rng(seed) in JavaScript: SeedSequence's pool and state words, PCG64 (XSL-RR on a 128-bit
 * LCG), Generator.random's doubles, Generator.choice(a, p=...) and the set Generator.choice(a, size, replace=False)
 * picks, bit for bit as numpy's own source computes them (numpy/random/bit_generator.pyx, _pcg64.pyx, src/pcg64/pcg64.h, _generator.pyx), so a seeded race in the browser
 * draws the numbers Python's samplers draw, in the same order. The 128-bit state is kept as eight 16-bit limbs so
 * every product stays exact in a double. `defaultRng(seed)`; tests/test_site.py checks it against numpy for several
 * seeds.
 */

var INIT_A = 0x43b0d7e5, MULT_A = 0x931e8875, INIT_B = 0x8b51f9dd, MULT_B = 0x58f38ded;
var MIX_MULT_L = 0xca01f9dd, MIX_MULT_R = 0x4973f715, POOL_SIZE = 4;
var PCG_MULT = limbsOf(2549297995355413924n, 4865540595714422341n);  // PCG_DEFAULT_MULTIPLIER_128

function mul32(a, b) { return Math.imul(a, b) >>> 0; }

function hashmix(value, hash) {
  value = (value ^ hash[0]) >>> 0;
  hash[0] = mul32(hash[0], MULT_A);
  value = mul32(value, hash[0]);
  return (value ^ (value >>> 16)) >>> 0;
}

function mix(x, y) {
  var r = (mul32(MIX_MULT_L, x) - mul32(MIX_MULT_R, y)) >>> 0;
  return (r ^ (r >>> 16)) >>> 0;
}

/* `_int_to_uint32_array`: a non-negative whole number as 32-bit words, lowest first */
function words(seed) {
  var out = [], n = BigInt(seed);
  if (n < 0n) throw new Error("The seed must be a whole number of at least 0.");
  if (n === 0n) return [0];
  for (; n > 0n; n >>= 32n) out.push(Number(n & 0xffffffffn));
  return out;
}

/* SeedSequence(seed): `mix_entropy` into the pool, then `generate_state(4, np.uint64)` as little-endian pairs */
function seedState(seed) {
  var entropy = words(seed), pool = [], hash = [INIT_A], i, j;
  for (i = 0; i < POOL_SIZE; i++) pool.push(hashmix(i < entropy.length ? entropy[i] : 0, hash));
  for (i = 0; i < POOL_SIZE; i++) {
    for (j = 0; j < POOL_SIZE; j++) if (i !== j) pool[j] = mix(pool[j], hashmix(pool[i], hash));
  }
  for (i = POOL_SIZE; i < entropy.length; i++) {
    for (j = 0; j < POOL_SIZE; j++) pool[j] = mix(pool[j], hashmix(entropy[i], hash));
  }
  var state = [], h = INIT_B;
  for (i = 0; i < 8; i++) {
    var d = (pool[i % POOL_SIZE] ^ h) >>> 0;
    h = mul32(h, MULT_B);
    d = mul32(d, h);
    state.push(BigInt((d ^ (d >>> 16)) >>> 0));
  }
  var u64 = function (k) { return state[2 * k] | (state[2 * k + 1] << 32n); };
  return {seed: (u64(0) << 64n) | u64(1), inc: (u64(2) << 64n) | u64(3)};
}

function limbsOf(high, low) {
  var n = (BigInt.asUintN(64, high) << 64n) | BigInt.asUintN(64, low), out = [];
  for (var i = 0; i < 8; i++) { out.push(Number(n & 0xffffn)); n >>= 16n; }
  return out;
}

function bigOf(limbs) {
  var n = 0n;
  for (var i = 7; i >= 0; i--) n = (n << 16n) | BigInt(limbs[i]);
  return n;
}

/* state x multiplier + inc, mod 2^128 (`pcg_setseq_128_step_r`) */
function step(state, inc) {
  var out = new Array(8), carry = 0;
  for (var k = 0; k < 8; k++) {
    var t = carry + inc[k];
    for (var i = 0; i <= k; i++) t += state[i] * PCG_MULT[k - i];
    out[k] = t % 65536;
    carry = Math.floor(t / 65536);
  }
  return out;
}

function PCG64(seed) {
  var s = seedState(seed), mask = (1n << 128n) - 1n;
  var inc = ((s.inc << 1n) | 1n) & mask;  // `pcg_setseq_128_srandom_r`
  this.inc = limbsOf(inc >> 64n, inc);
  var state = step(limbsOf(0n, 0n), this.inc), sum = (bigOf(state) + s.seed) & mask;
  this.state = step(limbsOf(sum >> 64n, sum), this.inc);
}

/* the next 64 bits as [high 32, low 32]: `pcg_output_xsl_rr_128_64` of the stepped state */
PCG64.prototype.next = function () {
  var l = this.state = step(this.state, this.inc);
  var hi = (((l[7] << 16) | l[6]) ^ ((l[3] << 16) | l[2])) >>> 0;
  var lo = (((l[5] << 16) | l[4]) ^ ((l[1] << 16) | l[0])) >>> 0;
  var rot = l[7] >>> 10;
  if (rot >= 32) { var t = hi; hi = lo; lo = t; rot -= 32; }
  if (rot === 0) return [hi, lo];
  return [((hi >>> rot) | (lo << (32 - rot))) >>> 0, ((lo >>> rot) | (hi << (32 - rot))) >>> 0];
};

function Generator(seed) { this.bits = new PCG64(seed); this.half = null; }

/* `pcg64_next32`: the low half of a 64-bit draw, its high half kept for the next call (numpy's has_uint32) */
Generator.prototype.uint32 = function () {
  if (this.half !== null) { var h = this.half; this.half = null; return h; }
  var w = this.bits.next();
  this.half = w[0];
  return w[1];
};

/* `buffered_bounded_lemire_uint32` with no buffer: a whole number in [0, rng], Lemire's rejection as numpy's */
Generator.prototype.bounded = function (rng) {
  if (rng === 0) return 0;
  var excl = rng + 1, m = BigInt(this.uint32()) * BigInt(excl), left = Number(m & 0xffffffffn);
  if (left < excl) {
    var threshold = (0xffffffff - rng) % excl;
    while (left < threshold) { m = BigInt(this.uint32()) * BigInt(excl); left = Number(m & 0xffffffffn); }
  }
  return Number(m >> 32n);
};

/* `Generator.choice(a, size, replace=False)` as a set (its order aside: numpy shuffles the picks after): Floyd's
   algorithm over bounded draws, as numpy does for a population of at most 10,000 */
Generator.prototype.sample = function (a, size) {
  if (a.length > 10000) throw new Error("sample draws from at most 10,000 values, as numpy's Floyd branch");
  var taken = new Set(), out = [];
  for (var j = a.length - size; j < a.length; j++) {
    var val = this.bounded(j), got = taken.has(val) ? j : val;
    taken.add(got); out.push(a[got]);
  }
  return out;
};

/* `Generator.random(n)`: n doubles in [0, 1), each (next_uint64 >> 11) x 2^-53 */
Generator.prototype.random = function (n) {
  var out = new Float64Array(n);
  for (var i = 0; i < n; i++) {
    var w = this.bits.next();
    out[i] = (w[0] * 2097152 + (w[1] >>> 11)) / 9007199254740992;
  }
  return out;
};

/* `Generator.choice(a, p=p)` for one draw: the cumulative sum over its last value, searched (side right) for one
   random double */
Generator.prototype.choice = function (a, p) {
  var cdf = new Float64Array(p.length), total = 0, i;
  for (i = 0; i < p.length; i++) { total += p[i]; cdf[i] = total; }
  for (i = 0; i < p.length; i++) cdf[i] /= total;
  var u = this.random(1)[0], k = 0;
  while (k < cdf.length && cdf[k] <= u) k++;
  return a[k];
};

/* np.random.default_rng(seed) */
export function defaultRng(seed) { return new Generator(seed); }
