// `jf train`: Jacobi Forcing / CLLM fine-tuning on packed trajectories, or plain language-model training on a
// text corpus, from a model file or from scratch; checkpoints resume exactly; `mpirun -np N` for data
// parallelism.
#include <cstdio>
#include <sstream>

#include "base/error.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/progress.h"
#include "kernels/parallel.h"
#include "model/convert.h"
#include "model/draft_file.h"
#include "model/hf.h"
#include "tokenizer/bpe_train.h"
#include "train/distributed.h"
#include "train/gemm.h"
#include "train/layers.h"
#include "train/trainer.h"

namespace jf::cli {

namespace {

struct TrainArgs {
  std::string teacher;
  std::string model, tokenizer_from, init, objective = "jacobi-forcing", data, ext = ".txt", out, resume;
  std::string save_type, consistency_norm = "reference", doc_sep, matmul = "f32";
  std::vector<std::string> corpus;
  size_t max_bytes = 0;
  int seq_len = 256, threads = 0, log_every = 10;
  bool no_teacher_consistency = false;
  bool whole_docs = false;   // every --corpus sequence starts at a document (none cut unless longer than seq_len)
  bool draft_layer = false;  // draft-head: add a draft layer under the head
  std::string draft;         // draft-head: a draft file to start from
  int draft_chain = 0;  // draft-head: train the draft layer's chain too, marked for this many drafts
  TrainOptions opt;
};

// "dim=256,layers=6,heads=8,kv-heads=8,ffn=768,ctx=512": a fresh Llama-architecture config.
ModelConfig parse_init(const std::string& spec, int vocab) {
  ModelConfig c;
  c.arch = Arch::Llama;
  c.name = "jf-scratch";
  c.vocab_size = vocab;
  c.dim = 256, c.n_layers = 6, c.n_heads = 8, c.n_kv_heads = 8, c.ffn_dim = 768, c.context_length = 1024;
  std::stringstream ss(spec);
  for (std::string kv; std::getline(ss, kv, ',');) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) throw Error("--init: expected key=value, got '" + kv + "'");
    const std::string k = kv.substr(0, eq);
    int v = 0;
    try {
      v = std::stoi(kv.substr(eq + 1));
    } catch (const std::exception&) {
      throw Error("--init: " + kv + " is not an integer");
    }
    if (k == "dim") c.dim = v;
    else if (k == "layers") c.n_layers = v;
    else if (k == "heads") c.n_heads = v;
    else if (k == "kv-heads") c.n_kv_heads = v;
    else if (k == "ffn") c.ffn_dim = v;
    else if (k == "ctx") c.context_length = v;
    else throw Error("--init: unknown key '" + k + "' (dim, layers, heads, kv-heads, ffn, ctx)");
  }
  c.head_dim = c.n_heads > 0 ? c.dim / c.n_heads : 0;
  c.rope_dim = c.head_dim;
  c.validate();
  return c;
}


// Documents (each BOS, tokens, EOS) packed whole, in order, into sequences of at most seq_len tokens; a document
// longer than that is cut into seq_len pieces. For corpora whose documents must be seen from their start, as
// at inference: a text-to-image document cut mid-image would teach pixels without their caption.
std::vector<std::vector<int32_t>> whole_document_sequences(const std::vector<std::vector<int32_t>>& docs, size_t seq_len) {
  std::vector<std::vector<int32_t>> seqs;
  std::vector<int32_t> cur;
  auto flush = [&] {
    if (cur.size() >= 2) seqs.push_back(std::move(cur));
    cur.clear();
  };
  for (const std::vector<int32_t>& d : docs) {
    if (cur.size() + d.size() > seq_len) flush();
    for (size_t i = 0; i < d.size(); i += seq_len) {
      if (i > 0) flush();
      cur.insert(cur.end(), d.begin() + static_cast<std::ptrdiff_t>(i), d.begin() + static_cast<std::ptrdiff_t>(std::min(d.size(), i + seq_len)));
    }
  }
  flush();
  return seqs;
}

// Corpus -> tokens (documents separated by EOS) -> non-overlapping sequences of seq_len tokens (--whole-docs:
// whole documents packed into sequences of at most seq_len).
std::vector<std::vector<int32_t>> corpus_sequences(const TrainArgs& a, const Tokenizer& tok) {
  CorpusStats stats;
  std::vector<std::string> docs = read_corpus(a.corpus, a.ext, a.max_bytes, &stats);
  if (docs.empty()) {
    const size_t skipped = stats.skipped_binary + stats.skipped_invalid_utf8 + stats.skipped_unreadable + stats.skipped_budget;
    if (skipped == 0) throw Error("the corpus has no '" + a.ext + "' files");
    throw Error("the corpus has no usable '" + a.ext + "' file (skipped: " + std::to_string(stats.skipped_invalid_utf8) +
                " invalid UTF-8, " + std::to_string(stats.skipped_binary) + " binary, " + std::to_string(stats.skipped_unreadable) +
                " unreadable, " + std::to_string(stats.skipped_budget) + " past --max-bytes)");
  }
  if (!a.doc_sep.empty()) docs = split_documents(docs, unescape_separator(a.doc_sep));
  std::vector<std::vector<int32_t>> encoded;
  size_t total = 0;
  for (const std::string& d : docs) {
    // Each document as a prompt would be encoded, then EOS. A tokenizer whose BOS is its EOS (GPT-2's
    // convention) already has the previous document's EOS in front.
    std::vector<int32_t>& ids = encoded.emplace_back();
    if (tok.spec().add_bos && tok.bos() >= 0 && tok.bos() != tok.eos()) ids.push_back(tok.bos());
    std::vector<int32_t> text = tok.encode(d, /*add_special=*/false, /*parse_special=*/false);
    ids.insert(ids.end(), text.begin(), text.end());
    ids.push_back(tok.eos());
    total += ids.size();
  }
  std::vector<std::vector<int32_t>> seqs;
  if (a.whole_docs) {
    seqs = whole_document_sequences(encoded, static_cast<size_t>(a.seq_len));
  } else {
    std::vector<int32_t> all;
    for (const auto& ids : encoded) all.insert(all.end(), ids.begin(), ids.end());
    for (size_t i = 0; i + a.seq_len <= all.size(); i += a.seq_len)
      seqs.emplace_back(all.begin() + i, all.begin() + i + a.seq_len);
  }
  std::fprintf(stderr, "jf train: corpus of %zu documents, %zu tokens -> %zu sequences of %s%d\n", docs.size(), total,
               seqs.size(), a.whole_docs ? "whole documents, at most " : "", a.seq_len);
  return seqs;
}

// The model's own tensors, unchanged, plus its trained draft head (and draft layer) in `type` (default: the
// output head's type; norms stay f32).
TensorSet with_draft_head(const Model& original, const TrainableModel& trained, const std::string& type) {
  const TensorRef* head = original.tensors().find(original.config().tied_output ? "token_embd.weight" : "output.weight");
  DType t = head->type;
  if (!type.empty()) dtype_from_name(type, &t);
  TensorSet ts = original.tensors();
  for (const std::string& name : tensor_names(trained.config())) {
    if (!name.starts_with("draft_")) continue;
    TensorSet draft = trained.to_tensor_set(t, name);
    ts.tensors[name] = *draft.find(name);
    ts.owned.insert(ts.owned.end(), draft.owned.begin(), draft.owned.end());
  }
  return ts;
}

int run_train(TrainArgs& a) {
  if (!objective_from_name(a.objective, &a.opt.objective))
    throw Error("--objective must be jacobi-forcing, cllm, ar or draft-head, got '" + a.objective + "'");
  const bool draft_head = a.opt.objective == Objective::DraftHead;
  if (draft_head && a.model.empty()) throw Error("objective 'draft-head' needs the model to give a draft head (-m)");
  if (draft_head && !a.teacher.empty()) throw Error("objective 'draft-head' has no teacher: its targets are the model's own clean rows");
  if (draft_head && !a.corpus.empty()) throw Error("objective 'draft-head' trains on --data alone (no --corpus)");
  if (a.draft_layer && !draft_head) throw Error("--draft-layer applies to the draft-head objective");
  if (a.draft_chain > 0 && !draft_head) throw Error("--draft-chain applies to the draft-head objective");
  if (!a.draft.empty() && !draft_head) throw Error("--draft applies to the draft-head objective");
  if (a.whole_docs && a.corpus.empty()) throw Error("--whole-docs applies to --corpus sequences");
  if (!consistency_norm_from_name(a.consistency_norm, &a.opt.loss.consistency_norm))
    throw Error("--consistency-norm must be reference or per-block, got '" + a.consistency_norm + "'");
  DType save_type = DType::F32;
  if (!a.save_type.empty() && !dtype_from_name(a.save_type, &save_type))
    throw Error("--save-type must be f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k or q6_k");
  if (a.out.empty()) throw Error("missing output path (-o)");
  if (a.seq_len < 2) throw Error("--seq-len must be >= 2");
  if (a.opt.loss.consistency_rows < 0) throw Error("--consistency-rows must be >= 0 (0: every row)");
  if (!(a.opt.loss.consistency_decay > 0.0f && a.opt.loss.consistency_decay <= 1.0f))
    throw Error("--consistency-decay must be in (0, 1]");
  set_num_threads(a.threads);
  Distributed& dist = Distributed::get();

  // ---- model and tokenizer
  std::unique_ptr<TrainableModel> model;
  std::unique_ptr<Tokenizer> tok;
  LoadedModel lm;  // draft-head: the model's own tensors are written back unchanged
  if (!a.model.empty()) {
    lm = load_model(a.model);
    if (!a.draft.empty()) attach_draft_file(*lm.model, a.draft);  // a draft file to go on training
    tok = std::move(lm.tokenizer);
    model = std::make_unique<TrainableModel>(
        TrainableModel::from_tensors(lm.model->config(), lm.model->tensors(), draft_head, draft_head && a.draft_layer));
    if (a.draft_chain > 0) model->set_draft_chain(a.draft_chain);  // throws without a draft layer
  } else {
    if (a.tokenizer_from.empty()) throw Error("training from scratch needs --tokenizer-from VOCAB.gguf (and --init)");
    tok = Tokenizer::from_gguf(GgufFile::open(a.tokenizer_from)->meta());
    model = std::make_unique<TrainableModel>(parse_init(a.init, tok->n_vocab()));
    model->init_random(a.opt.seed);
  }
  if (!tok) throw Error("the model has no tokenizer");
  GgufMetadata meta;
  tok->to_gguf(meta);

  // ---- data
  TrainData data;
  if (a.opt.objective == Objective::Ar) {
    if (a.corpus.empty()) throw Error("objective 'ar' needs --corpus DIR_OR_FILE");
    data.text = corpus_sequences(a, *tok);
  } else {
    if (a.data.empty()) throw Error("objective '" + a.objective + "' needs --data PACKED.jsonl (from jf pack)");
    std::istringstream in(read_text_file(a.data));
    std::string line;
    for (int lineno = 1; std::getline(in, line); lineno++) {
      if (line.empty()) continue;
      try {
        data.packed.push_back(PackedSequence::from_json(line));
      } catch (const Error& e) {
        throw Error(a.data + ":" + std::to_string(lineno) + ": " + e.what());
      }
    }
    if (!a.corpus.empty()) {  // real text mixed into the fine-tune
      data.text = corpus_sequences(a, *tok);
      if (data.text.empty()) throw Error("--corpus gives no sequence of --seq-len tokens");
      if (a.opt.text_accum == 0) a.opt.text_accum = 1;
    } else if (a.opt.text_accum > 0) {
      throw Error("--text-accum needs --corpus (the real text to mix in)");
    }
  }

  // ---- frozen teacher (the base model), same shape as the model
  std::unique_ptr<TrainableModel> teacher;
  if (!a.teacher.empty()) {
    if (a.opt.objective == Objective::Ar) throw Error("--teacher applies to jacobi-forcing and cllm, not ar");
    LoadedModel tm = load_model(a.teacher);
    const ModelConfig& tc = tm.model->config();
    const ModelConfig& mc = model->config();
    if (tc.vocab_size != mc.vocab_size || tc.dim != mc.dim || tc.n_layers != mc.n_layers)
      throw Error(a.teacher + ": the teacher must have the model's shape (" + mc.summary() + ")");
    teacher = std::make_unique<TrainableModel>(TrainableModel::from_tensors(tc, tm.model->tensors()));
  }
  if (a.opt.loss.teacher_mix < 0 || a.opt.loss.teacher_mix > 1) throw Error("--teacher-mix must be in [0, 1]");
  if (a.opt.loss.teacher_consistency && !teacher) throw Error("--teacher-consistency needs --teacher");
  // With a teacher, the consistency target is the base's clean distribution unless asked otherwise: the
  // student's own target lets it raise TPF by drifting (and degenerating) together with its target.
  if (teacher && !a.no_teacher_consistency) a.opt.loss.teacher_consistency = true;

  set_linear_precision(a.matmul == "bf16" ? LinearPrecision::Bf16 : LinearPrecision::F32);
  if (a.matmul == "bf16" && !gemm_bf16_native() && dist.rank() == 0)
    std::fprintf(stderr, "jf train: this build has no AVX512-BF16: --matmul bf16 is emulated (the same sums, slower than f32)\n");
  a.opt.checkpoint_path = a.out + ".ckpt.gguf";
  Trainer trainer(*model, data, a.opt, meta);
  trainer.set_teacher(teacher.get());
  if (!a.resume.empty()) trainer.resume(a.resume);
  if (dist.rank() == 0)
    std::fprintf(stderr, "jf train: %s, %lld parameters, %zu examples, %lld steps x %d micro-batches x %d processes, %d threads, %s products\n",
                 a.objective.c_str(), static_cast<long long>(model->n_params()), data.size(),
                 static_cast<long long>(a.opt.steps), a.opt.accum, dist.size(), num_threads(), a.matmul.c_str());
  Progress progress(static_cast<int>(a.opt.steps - trainer.step()), "train");
  const int64_t first_step = trainer.step();
  OffsetReport offsets;  // noisy rows by offset from the first mismatch, since the last log line
  trainer.run([&](const StepReport& r) {
    if (dist.rank() != 0) return;
    offsets.add(r.loss.by_offset);
    const double micro = static_cast<double>(a.opt.accum) * dist.size();
    char what[64];
    std::snprintf(what, sizeof what, "loss %.4f", r.loss.total / micro);
    progress.update(static_cast<int>(r.step - first_step), what);
    if (r.step % a.log_every != 0 && r.step != a.opt.steps && r.step != 1) return;
    std::string extra;
    if (teacher) extra += ", teacher KL " + std::to_string(r.loss.teacher_kl / micro);
    if (a.opt.text_accum > 0)
      extra += (teacher ? ", text KL " : ", text CE ") +
               std::to_string(r.loss.text / (static_cast<double>(a.opt.text_accum) * dist.size()));
    char line[400];
    std::snprintf(line, sizeof line, "step %lld/%lld  loss %.4f (ar %.4f, consistency %.4f%s)  lr %.2e  |g| %.3f  %.0f tok/s",
                  static_cast<long long>(r.step), static_cast<long long>(a.opt.steps), r.loss.total / micro,
                  r.loss.ar / micro, r.loss.consistency / micro, extra.c_str(), r.lr, r.grad_norm,
                  r.tokens / r.seconds);
    progress.log(line);
    if (offsets.rows[0] > 0) progress.log("  noisy rows by offset from the first mismatch (0/1/2/3/4+): " + offsets.summary());
    offsets = OffsetReport{};
  });
  progress.finish();
  if (dist.rank() == 0) {
    ModelConfig cfg;
    TensorSet ts = draft_head ? with_draft_head(*lm.model, *model, a.save_type)
                              : to_gguf_layout(model->config(), model->to_tensor_set(DType::F32), &cfg);
    if (draft_head) ts = to_gguf_layout(model->config(), ts, &cfg);
    else if (save_type != DType::F32) ts = convert_tensors(ts, save_type);
    meta.set("jf.train.objective", GgufValue::of_string(a.objective));
    meta.set("jf.train.steps", GgufValue::of_u64(static_cast<uint64_t>(trainer.step())));
    if (draft_head && a.out.ends_with(".draft.gguf"))  // the draft tensors alone, bound to the -m model
      write_draft_file(a.out, cfg, ts, base_fingerprint(lm.model->tensors()));
    else
      write_model_gguf(a.out, cfg, ts, meta);
    std::fprintf(stderr, "jf train: wrote %s (checkpoint with optimizer state: %s)\n", a.out.c_str(),
                 a.opt.checkpoint_path.c_str());
  }
  return 0;
}

}  // namespace

Command add_train_command(CLI::App& app) {
  auto a = std::make_shared<TrainArgs>();
  CLI::App* cmd = app.add_subcommand("train", "Train: Jacobi Forcing / CLLM on packed trajectories, or a language model (ar)");
  cmd->add_option("-m,--model", a->model, "Model to start from (any format jf reads); omit to train from scratch");
  cmd->add_option("--tokenizer-from", a->tokenizer_from, "From scratch: vocabulary GGUF (e.g. from jf tokenizer-train)");
  cmd->add_option("--init", a->init, "From scratch: dim=256,layers=6,heads=8,kv-heads=8,ffn=768,ctx=1024");
  cmd->add_option("--objective", a->objective,
                  "jacobi-forcing (default), cllm, ar, or draft-head (train only a draft head on the frozen -m model: "
                  "its Jacobi drafts improve, its output stays bit for bit the same)");
  cmd->add_option("--draft", a->draft, "draft-head: start from this draft file of the model (-o NAME.draft.gguf writes one)");
  cmd->add_flag("--draft-layer", a->draft_layer,
                "draft-head: put a draft layer under the draft head when the model has none, and train both: one "
                "transformer layer on each row's final hidden state plus the embedding of the model's greedy next "
                "token there, so the last verified row drafts the token after the bonus one");
  cmd->add_option("--draft-chain", a->draft_chain,
                  "draft-head with a draft layer: also train its chain, the layer run again on its own output and "
                  "draft for the draft after it, and mark the file (jf.draft_chain = N) so jacobi and multiblock draft "
                  "N more tokens that way. Steps 1..N are trained end to end, one more pass of the layer each, as far "
                  "as --consistency-rows reaches (step s trains the row s after each first mismatch: "
                  "--consistency-rows N+1 or 0 trains all N; 2 trains the first step alone, and later steps repeat it) "
                  "(2 measured best on jf's code model; default 0: no chain)")
      ->check(CLI::Range(0, TrainableModel::kMaxDraftChain));
  cmd->add_option("--data", a->data, "jacobi-forcing / cllm: packed sequences from jf pack");
  cmd->add_option("--corpus", a->corpus,
                  "ar: text files or directories; jacobi-forcing / cllm: real text mixed into every step (--text-accum)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--ext", a->ext, "File extension to read from --corpus directories (default .txt)");
  cmd->add_option("--doc-sep", a->doc_sep, "Cut each --corpus file into documents at this text (backslash-n is a newline), e.g. '\\n\\n'");
  cmd->add_option("--max-bytes", a->max_bytes, "Read at most this many --corpus bytes (default all)");
  cmd->add_option("--seq-len", a->seq_len, "Tokens per --corpus sequence (default 256)");
  cmd->add_flag("--whole-docs", a->whole_docs,
                "Start every --corpus sequence at a document (--doc-sep) and cut none that fits: whole documents "
                "packed into sequences of at most --seq-len, so each is trained from its start as at inference");
  cmd->add_option("--text-accum", a->opt.text_accum,
                  "jacobi-forcing / cllm: --corpus sequences per step on top of --accum packed ones (default 1 with --corpus)");
  cmd->add_option("--text-weight", a->opt.text_weight,
                  "Weight of the real-text term: KL(teacher || model) with --teacher, else cross-entropy (default 1)");
  cmd->add_option("--steps", a->opt.steps, "Optimizer steps (default 100)");
  cmd->add_option("--accum", a->opt.accum, "Micro-batches (sequences) per step and process (default 1)");
  cmd->add_option("--lr", a->opt.lr, "Peak learning rate (default 1e-4)");
  cmd->add_option("--min-lr", a->opt.min_lr, "Final learning rate of the cosine schedule (default 1e-5)");
  cmd->add_option("--warmup", a->opt.warmup, "Warm-up fraction of the steps (default 0.03)");
  cmd->add_option("--clip", a->opt.clip, "Gradient norm clip, 0 = off (default 1)");
  cmd->add_option("--weight-decay", a->opt.adam.weight_decay, "AdamW weight decay on matrices (default 0)");
  cmd->add_option("--ar-weight", a->opt.loss.ar_weight, "Weight of the AR loss in consistency + w * AR (default 10)");
  cmd->add_option("--consistency-norm", a->consistency_norm,
                 "reference (default: mean over all kept positions / blocks) or per-block (mean per block, then over blocks)");
  cmd->add_option("--teacher", a->teacher, "Frozen base model: its distribution on the clean stream is the AR target (and on --corpus text the text target)");
  cmd->add_option("--teacher-mix", a->opt.loss.teacher_mix,
                  "With --teacher: AR target = (1-m) x fixed-point token + m x teacher distribution (default 1)");
  cmd->add_flag("--teacher-consistency", a->opt.loss.teacher_consistency,
                "With --teacher: the consistency target is the teacher's clean-row distribution (the default "
                "whenever --teacher is given)");
  cmd->add_flag("--no-teacher-consistency", a->no_teacher_consistency,
                "With --teacher: the consistency target is the student's own clean row (the paper's form)");
  cmd->add_option("--consistency-rows", a->opt.loss.consistency_rows,
                  "Train only the first K noisy rows from each block's first mismatch, 0 = all (default 0)");
  cmd->add_option("--consistency-decay", a->opt.loss.consistency_decay,
                  "Weight the noisy row at offset d from the first mismatch by D^d, in (0, 1] (default 1)");
  cmd->add_option("--anchor-decay", a->opt.adam.anchor_decay,
                  "AdamW L2 pull toward the starting weights: p -= lr * d * (p - p0) (default 0)");
  cmd->add_option("--seed", a->opt.seed, "Data order and initialisation seed (default 1)");
  cmd->add_option("--save-every", a->opt.save_every, "Write a checkpoint every N steps (default: at the end)");
  cmd->add_option("--resume", a->resume, "Resume from a checkpoint (OUT.ckpt.gguf)");
  cmd->add_option("--stop-at", a->opt.stop_at, "Stop after this step, with a checkpoint (resume later with --resume)");
  cmd->add_option("--save-type", a->save_type, "Weight type of the final model's matrices (draft-head: of the draft head, default the output head's type): f32 (default), f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k (rows that do not fit a type's blocks take GGML's fallback)");
  cmd->add_option("--matmul", a->matmul,
                  "Linear layers' products: f32 (default) or bf16 (bfloat16 operands, fp32 sums: 1.5-2x faster training "
                  "on CPUs with AVX512-BF16; emulated, slower, elsewhere)")
      ->check(CLI::IsMember({"f32", "bf16"}));
  cmd->add_option("--log-every", a->log_every, "Print the loss every N steps (default 10)");
  cmd->add_option("-t,--threads", a->threads, "Threads per process (default: all cores)");
  cmd->add_option("-o,--output", a->out,
                  "Trained model (GGUF); OUT.ckpt.gguf holds the optimizer state. draft-head: NAME.draft.gguf writes a draft "
                  "file (the draft tensors alone, bound to the -m model; found by itself as MODEL.draft.gguf beside "
                  "MODEL.gguf), any other name the model with its draft tensors (a combined file only jf loads)")->required();
  return [a] { return run_train(*a); };
}

}  // namespace jf::cli
