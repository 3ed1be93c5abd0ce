#include "workloads/models/step_workload.h"

#include <unistd.h>

#include <filesystem>
#include <numeric>

#include "workloads/gqa_decode_batch/batch_spec.h"
#include "workloads/models/layer_check.h"
#include "workloads/models/step_run.h"
#include "workloads/report.h"

namespace kb::workloads {

namespace {

const KnobSet& phase_knobs() {
  static const KnobSet set{
      "model step",
      {{"phase", "decode",
        "decode: one new token for each request of the batch; prefill: the prompts (the batch's lengths), their last "
        "q_len tokens over a cached prefix"}}};
  return set;
}

const KnobSet& layers_knobs() {
  static const KnobSet set{
      "model layers",
      {{"layers", "2", "decoder layers simulated: N (the others scaled from them, as the report says) or all"}}};
  return set;
}

// What the step must read and compute: every layer's weights and KV cache once, the
// embedding rows of its tokens and the LM head (model_step, on each request's last token).
// A new token attends to every position up to its own.
struct StepCost {
  double weight_bytes = 0, kv_bytes = 0, flops = 0;
};
StepCost cost_of(const StepConfig& c, std::uint32_t layers, bool ends) {
  const ModelPreset& m = c.model;
  const double context = static_cast<double>(std::accumulate(c.lens.begin(), c.lens.end(), std::uint64_t{0}));
  const double b = c.batch(), tokens = static_cast<double>(c.tokens()), params = static_cast<double>(m.layer_parameters());
  double keys = 0;  // (query, key) pairs
  for (std::uint32_t r = 0; r < c.batch(); ++r) {
    const double last = static_cast<double>(c.lens[r]), first = last - static_cast<double>(c.news(r)) + 1;
    keys += (first + last) * (last - first + 1) / 2;
  }
  StepCost s;
  s.weight_bytes = layers * params * 2;
  s.kv_bytes = layers * context * 2.0 * m.heads_kv * m.head_dim * 2;
  s.flops = layers * (2 * params * tokens + 4.0 * m.heads_q * m.head_dim * keys);
  if (ends) {
    const double head = static_cast<double>(m.vocab) * m.hidden;
    s.weight_bytes += (tokens * m.hidden + head + m.hidden) * 2;  // the tokens' embedding rows, the head, the final norm
    s.flops += 2 * head * b;
  }
  return s;
}

bool layer_op(const std::string& op) {
  return op != "embed" && op != "embed_all_reduce" && op != "last_tokens" && op != "final_norm" && op != "lm_head" &&
         op != "pick_gather" && op != "pick";
}

class StepJob : public Job {
 public:
  StepJob(StepConfig c, std::optional<StepValues> values, bool check, std::string outputs, bool whole)
      : c_(std::move(c)), values_(std::move(values)), check_(check), outputs_(std::move(outputs)), whole_(whole) {}
  bool data_mode(bool) const override { return values_.has_value(); }
  Result run(RuntimeContext& rt) override {
    const Topology& topo = rt.system().topology();
    const StepResult s = run_step(rt, c_, values_ ? &*values_ : nullptr);
    const ModelPreset& m = c_.model;
    Result r = Result::of(whole_ ? "model_step" : "decoder_layer", s.devices, s.cycles, topo);
    r.mode = values_ ? "data" : "timing";
    std::vector<std::uint32_t> devs;
    for (const SipId d : s.devices) devs.push_back(d.value);
    const std::uint32_t total = whole_ ? m.layers : 1;
    r.knobs = {{"model", m.name},       {"phase", c_.prefill ? "prefill" : "decode"}, {"batch", c_.batch()},
               {"q_len", c_.q_len},
               {"page_rows", c_.page_rows}, {"layers", c_.layers},     {"model_layers", m.layers},
               {"devices", devs}};
    const double context = static_cast<double>(std::accumulate(c_.lens.begin(), c_.lens.end(), std::uint64_t{0}));
    r.add("requests.context", context, Merge::Same);
    r.add("requests.longest", *std::max_element(c_.lens.begin(), c_.lens.end()), Merge::Same);
    r.add("requests.new_tokens", c_.tokens(), Merge::Same);
    // The layers not simulated take as long as the simulated ones, on average.
    const double scale = static_cast<double>(total) / c_.layers;
    const double step = static_cast<double>(s.cycles) + static_cast<double>(total - c_.layers) * s.layer_cycles;
    r.add("step.cycles", step, Merge::Same);
    r.add("step.layer_cycles", s.layer_cycles, Merge::Same);
    r.add("step.layer_span",
          {{"begin", s.layers.begin}, {"end", s.layers.end}, {"layers", s.layers.layers}},
          Merge::Same);
    r.add("step.scaled", total != c_.layers, Merge::Same);
    nlohmann::json ops = nlohmann::json::array();
    for (const auto& [op, cycles] : s.by_op)
      ops.push_back({{"op", op}, {"cycles", layer_op(op) ? cycles * scale : cycles}});
    r.add("by_op", ops, Merge::Same);
    r.add("bytes.weights", s.weight_bytes * scale + s.end_weight_bytes, Merge::Same);
    r.add("bytes.kv", s.kv_bytes * scale, Merge::Same);
    r.add("bytes.activations", s.activation_bytes * scale + s.end_activation_bytes, Merge::Same);
    const StepCost cost = cost_of(c_, total, whole_);
    r.add("flops", cost.flops, Merge::Same);
    r.add("roofline.weight_bytes", cost.weight_bytes, Merge::Same);
    r.add("roofline.kv_bytes", cost.kv_bytes, Merge::Same);
    // Decode against the bytes it must read over the HBM bandwidth; prefill against its
    // FLOPs over the GEMM peak.
    const double bytes_per_cycle = r.machine.hbm_bytes_per_second / topo.pe.clock_hz;
    const double flops_per_cycle = r.machine.peak_flops_per_second / topo.pe.clock_hz;
    r.add("roofline.cycles",
          c_.prefill ? cost.flops / flops_per_cycle : (cost.weight_bytes + cost.kv_bytes) / bytes_per_cycle,
          Merge::Same);
    if (s.out) {
      r.numerics = check_layer(c_, *values_, *s.out);
      r.numerics->enforced = check_;
      if (!outputs_.empty()) write_layer_files(outputs_, c_, *values_, *s.out);
    }
    return r;
  }

 private:
  StepConfig c_;
  std::optional<StepValues> values_;
  bool check_;
  std::string outputs_;
  bool whole_;
};

}  // namespace

std::string StepWorkload::summary() const {
  return whole_ ? "a model's decode step: embedding, every decoder layer (N simulated, the rest scaled), LM head; "
                  "tensor-parallel over the SIPs"
                : "one decoder layer of a model's decode step, tensor-parallel over the SIPs; data mode checks it "
                  "against fp64";
}

std::vector<const KnobSet*> StepWorkload::knobs() const {
  if (whole_)
    return {&model_knobs(), &phase_knobs(), &q_len_knobs(), &gqa::batch_knobs(), &layers_knobs(), &storage_knobs()};
  return {&model_knobs(), &phase_knobs(),  &q_len_knobs(),  &gqa::batch_knobs(),
          &outputs_knobs(), &check_knobs(), &storage_knobs()};
}

std::unique_ptr<Job> StepWorkload::configure(const Values& v, const Setup& setup) const {
  StepConfig c;
  c.model = model_preset(v.given("model") ? v.text("model") : "llama3-70b");
  if (dtype_of(v) != DType::bf16)
    throw ConfigError("{dtype} " + std::string(dtype_name(dtype_of(v))) + ": a model's weights and KV cache are bf16", true);
  const std::string phase = v.text("phase");
  if (phase != "decode" && phase != "prefill")
    throw ConfigError("{phase} '" + ConfigError::literal(phase) + "': allowed values: decode, prefill", true);
  c.prefill = phase == "prefill";
  if (v.given("q_len")) {
    if (!c.prefill) throw ConfigError("{q_len}: a decode step has one new token a request; give it with {phase} prefill", true);
    c.q_len = v.count32("q_len", 1, 1u << 24);
  }
  c.lens = gqa::parse_batch(v.given("batch") ? v.text("batch") : "8192");
  c.page_rows = v.count32("page_rows", 1, 1u << 16);
  c.devices = setup.devices;
  c.ends = whole_;
  if (whole_) {
    const std::string layers = v.text("layers");
    c.layers = layers == "all" ? c.model.layers : v.count32("layers", 1, c.model.layers);
  }
  check_step(c, *setup.topo);
  const bool check = !whole_ && v.on("check");
  const std::string outputs = whole_ ? "" : v.text("outputs");
  if ((check || !outputs.empty()) && !setup.data)
    throw ConfigError(std::string(check ? "{check}" : "{outputs}") + " needs {data} (data mode)", true);
  if (setup.data && whole_)
    throw ConfigError("{data}: model_step runs in timing mode; decoder_layer runs a layer in data mode and checks it "
                      "against fp64", true);
  if (!outputs.empty()) {
    if (!std::filesystem::is_directory(outputs))
      throw ConfigError("{outputs} " + ConfigError::literal(outputs) + ": no such folder; give an existing folder");
    if (::access(outputs.c_str(), W_OK) != 0)
      throw ConfigError("{outputs} " + ConfigError::literal(outputs) + ": the folder is not writable");
  }
  std::optional<StepValues> values;
  if (setup.data) values = StepValues::random(c, seed_of(v));
  return std::make_unique<StepJob>(std::move(c), std::move(values), check, outputs, whole_);
}

void StepWorkload::derive(Result& r, const Topology& topo) const {
  const double clock = static_cast<double>(r.simulated_cycles) / r.simulated_seconds;
  const double seconds = r.number("step.cycles") / clock;
  r.add("step.seconds", seconds, Merge::Derived);
  // Decode: a token for each request; prefill: every prompt token, and the first output
  // token comes when the step ends.
  const bool prefill = r.knobs.at("phase") == "prefill";
  r.add("tokens_per_s", (prefill ? r.number("requests.new_tokens") : r.knobs.at("batch").get<double>()) / seconds,
        Merge::Derived);
  r.add(prefill ? "time_to_first_token" : "time_per_output_token", seconds, Merge::Derived);
  r.add("roofline_efficiency", r.number("roofline.cycles") / r.number("step.cycles"), Merge::Derived);
  r.add("flops_per_s", r.number("flops") / seconds, Merge::Derived);
  const nlohmann::json& span = r.figure("step.layer_span");
  if (r.activity.empty() || span.at("layers") == 0) return;
  // The step's energy as its latency is scaled: the simulated run's, and each layer not
  // simulated at the simulated layers' mean activity; static power for the whole step.
  const double missing =  // decoder_layer simulates its one layer
      whole_ ? r.knobs.at("model_layers").get<double>() - r.knobs.at("layers").get<double>() : 0;
  std::array<double, kActs> counts{};
  for (const SipActivity& a : r.activity) {
    const std::array<double, kActs> all = as_doubles(a.totals);
    const std::array<double, kActs> layer = counts_between(a, span.at("begin"), span.at("end"));
    for (std::size_t e = 0; e < kActs; ++e)
      counts[e] += all[e] + missing * layer[e] / span.at("layers").get<double>();
  }
  r.energy =
      energy_of(dynamic_joules(counts, topo.energy), static_watts(topo, r.devices.size()), seconds);
  const double tokens =
      prefill ? r.number("requests.new_tokens") : r.knobs.at("batch").get<double>();
  r.add("energy.joules_per_token", r.energy->total_joules / tokens, Merge::Derived);
  r.add("energy.pj_per_flop", r.energy->total_joules / r.number("flops") * 1e12, Merge::Derived);
}

std::string StepWorkload::report(const Result& r, const Topology& topo) const {
  (void)topo;
  const nlohmann::json& k = r.knobs;
  report::Lines add;
  add("kernbench: %s on %s (%s), %s mode\n", r.workload.c_str(), r.topology_name.c_str(), r.topology_file.c_str(),
      r.mode.c_str());
  const auto layers = k.at("layers").get<std::uint32_t>(), total = k.at("model_layers").get<std::uint32_t>();
  const bool prefill = k.at("phase") == "prefill";
  add("  model           %s, %s of %u requests (%.0f new tokens, %.0f context tokens, the longest %llu), devices %s\n",
      k.at("model").get<std::string>().c_str(), prefill ? "prefill" : "decode", k.at("batch").get<std::uint32_t>(),
      r.number("requests.new_tokens"), r.number("requests.context"),
      static_cast<unsigned long long>(r.count("requests.longest")), devices_text(r.devices).c_str());
  report::simulated_line(add, r);
  if (r.workload == "model_step")
    add("  layers          %u of %u simulated%s: %.0f cycles a layer\n", layers, total,
        layers == total ? "" : ", the step scaled from them", r.number("step.layer_cycles"));
  if (prefill)
    add("  step            %.0f cycles = %.4g ms: %.4g tokens/s, time to first token %.4g ms\n", r.number("step.cycles"),
        1e3 * r.number("step.seconds"), r.number("tokens_per_s"), 1e3 * r.number("time_to_first_token"));
  else
    add("  step            %.0f cycles = %.4g ms: %.4g tokens/s, %.4g ms per output token\n", r.number("step.cycles"),
        1e3 * r.number("step.seconds"), r.number("tokens_per_s"), 1e3 * r.number("time_per_output_token"));
  if (prefill)
    add("  roofline        %.4g GFLOP over the GEMM peak of the run's SIPs: %.0f cycles, efficiency %.1f%%\n",
        r.number("flops") / 1e9, r.number("roofline.cycles"), 100 * r.number("roofline_efficiency"));
  else
    add("  roofline        weights %.4g GB + KV %.4g GB over the HBM of the run's SIPs: %.0f cycles, efficiency "
        "%.1f%%\n",
        r.number("roofline.weight_bytes") / 1e9, r.number("roofline.kv_bytes") / 1e9, r.number("roofline.cycles"),
        100 * r.number("roofline_efficiency"));
  add("  bytes moved     weights %.4g GB, KV %.4g GB, activations and messages %.4g GB; %.4g GFLOP\n",
      r.number("bytes.weights") / 1e9, r.number("bytes.kv") / 1e9, r.number("bytes.activations") / 1e9,
      r.number("flops") / 1e9);
  double sum = 0;
  for (const auto& op : r.figure("by_op")) sum += op.at("cycles").get<double>();
  add("  by op           (mean cycles of a PE in each op)\n");
  for (const auto& op : r.figure("by_op"))
    add("    %-17s %12.0f  %5.1f%%\n", op.at("op").get<std::string>().c_str(), op.at("cycles").get<double>(),
        100 * op.at("cycles").get<double>() / sum);
  return add.text();
}

}  // namespace kb::workloads
