// jf against llama.cpp (the reference engine, from node-llama-cpp's prebuilt CPU libraries) on the same files:
// - jf convert writes the bytes llama.cpp's quantizer writes, for every file type both have;
// - jf reads the files llama.cpp's quantizer wrote and picks the tokens llama.cpp picks;
// - llama.cpp reads the models jf writes, of every architecture, and picks the tokens jf picks;
// - both give a text the same perplexity, jf's tokenizers give llama.cpp's tokens, and jf's chat formats
//   llama.cpp's renderings;
// - and the comparison of choices fails on a file whose weights were changed (so it can fail).
import {strict as assert} from "node:assert";
import {closeSync, copyFileSync, mkdirSync, openSync, readFileSync, writeFileSync, writeSync} from "node:fs";
import {join} from "node:path";
import {before, describe, test} from "node:test";

import {agreement, chatWithLlamaCpp, env, jf, jfGreedy, llamaCppScores, openLlamaCpp, quantizeWithLlamaCpp}
  from "./engines.mjs";
import {readGguf} from "./gguf.mjs";

const dir = join(env.work, "llamacpp-interop");
mkdirSync(dir, {recursive: true});
const stories = join(env.shared, "models/stories260K/stories260K.gguf");
const phi3Vocab = join(env.shared, "models/tokenizers/ggml-vocab-phi-3.gguf");
const prompts = ["Once upon a time", "The little dog saw a big", "Lily and Ben"];
const at = (name) => join(dir, name);

// Every matrix 256 wide (all K-quant types apply), 4 query heads per key-value head, f32 weights,
// stories260K's tokenizer. 16 layers for the per-layer rules of the _M / _S mixes; 2 for the comparisons of
// outputs, as rounding differences grow with depth in a random model.
const base = at("tiny-256-16-layers-f32.gguf");
const shallow = at("tiny-256-2-layers-f32.gguf");

let llama;
before(async () => {
  jf("random", "--preset", "tiny-256", "--layers", "16", "--type", "f32", "--vocab-from", stories, "-o", base);
  jf("random", "--preset", "tiny-256", "--type", "f32", "--vocab-from", stories, "-o", shallow);
  llama = await openLlamaCpp();
});

// jf's greedy tokens on `jfModel` scored by llama.cpp on `llamaModel` (the same file unless a test says).
async function compare(jfModel, llamaModel = jfModel, n = 16) {
  const runs = [];
  for (const text of prompts) {
    const g = jfGreedy(jfModel, text, n);
    const ll = await llamaCppScores(llama, llamaModel, {text, prompt: g.prompt_tokens, forced: g.tokens});
    assert.deepEqual(g.prompt_tokens, ll.tokens, `"${text}": the tokenizers disagree`);
    runs.push(agreement(ll.scores));
  }
  const total = runs.reduce((t, r) => ({positions: t.positions + r.positions, same: t.same + r.same,
    worst: Math.min(t.worst, r.worst)}), {positions: 0, same: 0, worst: 1});
  return {...total, runs};
}

// Same model up to activation rounding: jf's token is llama.cpp's greedy choice or a near-tie, within 8% of
// its probability (logits 0.08 apart), and the same token at four positions in five at least. Both engines
// round activations to 8 bits, but not identically (llama.cpp's Q8_0 scales are fp16, its kernels reorder
// sums): measured on these 2-layer models, the worst ratio is 0.97 and 44 of 48 tokens are the same;
// f32 weights give 48 of 48 at ratio 1. A changed matrix (the last test) gives 3 of 48 at 0.03.
function assertSameModel(r, label) {
  const detail = `${label}: ${r.same}/${r.positions} tokens the same, worst p(jf's token)/p(top) ${r.worst.toFixed(4)}`;
  assert.ok(r.worst >= 0.92, detail);
  assert.ok(r.same >= 0.8 * r.positions, detail);
}

describe("jf convert writes the bytes llama.cpp's quantizer writes", () => {
  const types = ["f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q2_k", "q3_k_s", "q3_k_m", "q3_k_l",
    "q4_k_s", "q4_k_m", "q5_k_s", "q5_k_m", "q6_k", "iq4_nl", "iq4_xs"];
  const sameFile = (source, type, tag) => {
    const ours = at(`${tag}-jf-${type}.gguf`);
    const theirs = at(`${tag}-llamacpp-${type}.gguf`);
    jf("convert", "-m", source, "--type", type, "-o", ours);
    quantizeWithLlamaCpp(source, theirs, type);
    const a = readGguf(ours);
    const b = readGguf(theirs);
    assert.equal(a.meta.get("general.file_type"), b.meta.get("general.file_type"), "general.file_type");
    assert.deepEqual([...a.tensors.keys()].sort(), [...b.tensors.keys()].sort());
    for (const [name, t] of b.tensors) {
      const o = a.tensors.get(name);
      assert.equal(o.type, t.type, `${name}: type ${o.type} where llama.cpp writes ${t.type}`);
      assert.ok(o.bytes.equals(t.bytes), `${name}: the ${type} bytes differ from llama.cpp's`);
    }
  };
  for (const type of types) test(`${type}, 256-wide rows`, () => sameFile(base, type, "tiny-256"));
  // stories260K's rows are 64 and 172 wide: the K types fall back to the legacy ones, as in real files'
  // odd-sized tensors, and its 2 query heads per key-value head take the other attn_v rules.
  for (const type of ["q2_k", "q3_k_m", "q4_k_m", "q5_k_m", "q6_k", "iq4_xs"]) {
    test(`${type}, stories260K's 64- and 172-wide rows`, () => sameFile(stories, type, "stories"));
  }
});

describe("jf reads llama.cpp's quantized files as llama.cpp does", () => {
  const types = ["q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q2_k", "q3_k_m", "q4_k_s", "q4_k_m", "q5_k_m", "q6_k",
    "iq4_nl", "iq4_xs"];
  for (const type of types) {
    test(type, async () => {
      const file = at(`read-llamacpp-${type}.gguf`);
      quantizeWithLlamaCpp(shallow, file, type);
      assertSameModel(await compare(file), `${type} written by llama.cpp`);
    });
  }
});

describe("llama.cpp reads the models jf writes as jf does", () => {
  test("stories260K (a trained model), 48 tokens", async () => {
    assertSameModel(await compare(stories, stories, 48), "stories260K");
  });
  // Random f32 models of each architecture: gemma's windows of 8 positions, phi3's partial rotary and
  // LongRoPE, Llama 3.1's rope_freqs, YaRN.
  const shapes = ["llama", "qwen2", "qwen3", "gemma2", "gemma3", "phi3"].map((a) => [a, ["--arch", a]]);
  shapes.push(["llama3-tiny", ["--preset", "llama3-tiny"]], ["qwen2-yarn-tiny", ["--preset", "qwen2-yarn-tiny"]]);
  for (const [name, shape] of shapes) {
    test(`${name} (random, f32)`, async () => {
      const file = at(`arch-${name}.gguf`);
      // llama.cpp's phi3 needs Phi-3's special tokens in the vocabulary.
      const vocab = name === "phi3" ? phi3Vocab : stories;
      jf("random", ...shape, "--type", "f32", "--vocab-from", vocab, "-o", file);
      assertSameModel(await compare(file), name);
    });
  }
  for (const type of ["q4_k_m", "q5_0", "iq4_xs"]) {
    test(`${type} written by jf`, async () => {
      const file = at(`jf-${type}.gguf`);
      jf("convert", "-m", shallow, "--type", type, "-o", file);
      assertSameModel(await compare(file), `${type} written by jf`);
    });
  }
});

describe("jf's perplexity is llama.cpp's", () => {
  // The first TinyStories story (373 tokens) scored after BOS by both engines: jf perplexity in one window,
  // llama.cpp fed the same tokens. f32 weights agree to 4e-7 (relative); llama.cpp-quantized files to
  // 0.02-0.21%, from activation rounding.
  const story = at("story.txt");
  const cases = [["f32", 1e-5], ["q8_0", 5e-3], ["q5_1", 5e-3], ["q4_k_m", 5e-3], ["q2_k", 5e-3]];
  for (const [type, tolerance] of cases) {
    test(`stories260K ${type}`, async () => {
      const text = readFileSync(join(env.shared, "data/tinystories/tinystories_sample_cs336.txt"), "utf8")
        .split("<|endoftext|>")[0].trim();
      writeFileSync(story, text);
      const file = type === "f32" ? stories : at(`ppl-llamacpp-${type}.gguf`);
      if (type !== "f32") quantizeWithLlamaCpp(stories, file, type);
      const ours = JSON.parse(jf("perplexity", "-m", file, "-f", story, "--window", "512", "--json", "-t", "2"));
      const ids = JSON.parse(jf("tokenize", "-m", file, "-f", story, "--ids"));
      const ll = await llamaCppScores(llama, file, {text, prompt: ids.slice(0, 1), forced: ids.slice(1)});
      assert.deepEqual(ll.tokens, ids);
      const theirs = -ll.scores.reduce((sum, x) => sum + Math.log(x.pForced), 0) / ll.scores.length;
      assert.equal(ours.tokens, ll.scores.length);
      const rel = Math.abs(ours.mean_nll - theirs) / theirs;
      assert.ok(rel < tolerance, `mean NLL jf ${ours.mean_nll} llama.cpp ${theirs}: ${rel} apart`);
    });
  }
});

test("the comparison fails on a file whose weights differ", async () => {
  const good = at("control-q4_k_m.gguf");
  const bad = at("control-q4_k_m-changed.gguf");
  jf("convert", "-m", shallow, "--type", "q4_k_m", "-o", good);
  copyFileSync(good, bad);
  // Change bits in half of the first layer's attn_q quants: one matrix of 14.
  const t = readGguf(good).tensors.get("blk.0.attn_q.weight");
  const changed = Buffer.from(t.bytes);
  for (let i = changed.length / 2; i < changed.length; i++) changed[i] ^= 0x11;
  const fd = openSync(bad, "r+");
  writeSync(fd, changed, 0, changed.length, t.dataOffset);
  closeSync(fd);
  assertSameModel(await compare(good), "control, unchanged");
  const r = await compare(good, bad);
  assert.throws(() => assertSameModel(r, "control, changed"), /tokens the same/);
});

describe("jf's tokenizers give llama.cpp's tokens", () => {
  // Awkward texts from a seeded generator: spaces and newlines in runs, digits, contractions, accents, CJK,
  // emoji, right-to-left scripts, code, and the special tokens' own spellings.
  function texts(specials) {
    let state = 20261125;
    const pick = (n) => {
      state = (state * 1103515245 + 12345) % 2147483648;
      return state % n;
    };
    const pieces = [" ", "  ", "   ", "\n", "\n\n", "\t", " \n ", "Hello", "world", "'s", "'ll", "'VE", "don't",
      "I'm", "123", "4567890", "3.14", "1,000", "é", "ñandú", "Ünïcödé", "日本語", "中文", "한국어", "🦙", "👍🏽",
      "Привет", "مرحبا", "שלום", "(", ")", "{", "}", "[]", "def", "return", "x = 1;", "    indented", "__init__",
      "//", "#include", "A", "a", "!!", "?", "...", "—", "€100", "\u00a0", "\u200b", "ǅ", "ﬁ", "\r\n",
      // Greek and letter-like code points that Unicode normalization would rewrite (deepseek-llm's ranges).
      "\u1f7d", "\u1fd3", "\u1fbe", "\u2126", "\u212a", "\u212b", "\u03ce", "Καλημέρα", ...specials];
    const out = ["", " ", "  ", "\n", "Hello world", " Hello world", "Hello  world", "\n\n\nx", "\t\tfoo", ...specials];
    for (let i = 0; i < 150; i++) {
      let s = "";
      for (let n = 1 + pick(8); n > 0; n--) s += pieces[pick(pieces.length)];
      out.push(s);
    }
    return out;
  }
  async function sameTokens(file) {
    const g = readGguf(file);
    const tokens = g.meta.get("tokenizer.ggml.tokens");
    const types = g.meta.get("tokenizer.ggml.token_type");
    const specials = tokens.filter((t, i) => types[i] === 3 || types[i] === 4).slice(0, 12);
    const all = texts(specials);
    const input = at(`texts-${file.split("/").pop()}.jsonl`);
    writeFileSync(input, all.map((t) => JSON.stringify(t)).join("\n") + "\n");
    const model = await llama.loadModel({modelPath: file, vocabOnly: true});
    try {
      for (const parseSpecial of [false, true]) {
        const flags = parseSpecial ? ["--parse-special"] : [];
        const ours = jf("tokenize", "-m", file, "--no-bos", "--jsonl", "-f", input, ...flags).trim().split("\n");
        assert.equal(ours.length, all.length);
        all.forEach((text, i) => {
          const theirs = model.tokenize(text, parseSpecial);
          assert.deepEqual(JSON.parse(ours[i]), theirs, `${JSON.stringify(text)} (parse special: ${parseSpecial})`);
        });
      }
    } finally {
      await model.dispose();
    }
  }
  const vocabs = ["llama-spm", "phi-3", "gpt-2", "falcon", "deepseek-coder", "starcoder"]
    .map((v) => join(env.shared, `models/tokenizers/ggml-vocab-${v}.gguf`));
  for (const file of [...vocabs, stories]) test(file.split("/").pop(), () => sameTokens(file));
  // Each family of BPE pre-tokenizers jf knows (other names are aliases of these), on a vocabulary jf trains
  // for it (merges learned on these texts and the README), so that llama.cpp applies its own split for that
  // name to the same merges.
  const pres = ["llama-bpe", "qwen2", "deepseek-r1-qwen", "smollm", "gpt-4o", "deepseek-llm", "deepseek-coder",
    "deepseek-v3", "falcon", "tekken", "starcoder", "gpt-2", "mpt", "poro-chat", "viking", "default"];
  for (const pre of pres) {
    test(`pre-tokenizer ${pre} (a vocabulary jf trained)`, async () => {
      const corpus = at("tokenizer-corpus.txt");
      writeFileSync(corpus, texts([]).join("\n") + readFileSync(new URL("../../README.md", import.meta.url), "utf8"));
      const file = at(`vocab-${pre}.gguf`);
      jf("tokenizer-train", "--corpus", corpus, "--ext", "", "--vocab", "1500", "--pre", pre, "-o", file);
      await sameTokens(file);
    });
  }
});

describe("jf's chat formats render as llama.cpp's built-in templates", () => {
  // One user message, with and without a system message, through `jf generate --chat` (the rendered prompt
  // in --json, after the BOS text jf writes and llama.cpp leaves to the tokenizer). jf's llama2 is
  // llama.cpp's llama2-sys (Meta's <<SYS>> block).
  const pairs = [["chatml", "chatml"], ["llama3", "llama3"], ["gemma", "gemma"], ["phi3", "phi3"],
    ["llama2", "llama2-sys"], ...["mistral-v1", "mistral-v3", "mistral-v3-tekken", "mistral-v7", "mistral-v7-tekken"]
      .map((f) => [f, f])];
  for (const [ours, theirs] of pairs) {
    test(ours, () => {
      for (const system of [null, "Be brief."]) {
        const messages = [...(system ? [["system", system]] : []), ["user", "Hi there, how are you?"]];
        const flags = system ? ["--system", system] : [];
        const out = jf("generate", "-m", stories, "--chat", "--chat-format", ours, ...flags, "-p", messages.at(-1)[1],
          "-n", "0", "--json");
        const prompt = JSON.parse(out.trim().split("\n").pop()).prompt;
        assert.ok(prompt.startsWith("<s>"), prompt);
        assert.equal(prompt.slice(3), chatWithLlamaCpp(theirs, messages), `system: ${system}`);
      }
    });
  }
});
