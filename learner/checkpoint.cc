// The GNN policy's checkpoints and weight bytes (learner/policy.h): the file format of the
// ppo-gnn agent (learner/ppo_agent.h).

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "learner/policy.h"

namespace rewire {

// ---------------------------------------------------------------------------- checkpoints

namespace {

constexpr const char* kFormat = "rewire-policy 1";

std::string MetaText(const CheckpointMeta& m) {
  std::ostringstream os;
  os.precision(17);
  os << kFormat << "\n"
     << "policy_version " << m.policy_version << "\n"
     << "global_step " << m.global_step << "\n"
     << "wall_time " << m.wall_time << "\n"
     << "best_speedup " << m.best_speedup << "\n"
     << "hidden " << m.shape.hidden << "\n"
     << "layers " << m.shape.layers << "\n"
     << "heads " << m.shape.heads << "\n"
     << "node_features " << kNodeFeatures << "\n"
     << "shape_features " << kShapeFeatures << "\n"
     << "rng " << m.rng_state << "\n";
  if (!m.agent.empty()) os << "agent " << m.agent << "\n";
  return os.str();
}

StatusOr<CheckpointMeta> ParseMeta(const std::string& path, const std::string& text) {
  std::istringstream is(text);
  std::string line;
  if (!std::getline(is, line) || line != kFormat) {
    return InvalidArgument(path + " is not a rewire policy checkpoint (format '" + line + "')");
  }
  CheckpointMeta m;
  int node_features = -1, shape_features = -1;
  while (std::getline(is, line)) {
    const size_t sp = line.find(' ');
    const std::string key = line.substr(0, sp),
                      value = sp == std::string::npos ? "" : line.substr(sp + 1);
    try {
      if (key == "policy_version")
        m.policy_version = std::stoll(value);
      else if (key == "global_step")
        m.global_step = std::stoll(value);
      else if (key == "wall_time")
        m.wall_time = std::stod(value);
      else if (key == "best_speedup")
        m.best_speedup = std::stod(value);
      else if (key == "hidden")
        m.shape.hidden = std::stoi(value);
      else if (key == "layers")
        m.shape.layers = std::stoi(value);
      else if (key == "heads")
        m.shape.heads = std::stoi(value);
      else if (key == "node_features")
        node_features = std::stoi(value);
      else if (key == "shape_features")
        shape_features = std::stoi(value);
      else if (key == "rng")
        m.rng_state = value;
      else if (key == "agent")
        m.agent = value;
    } catch (const std::exception&) {
      return InvalidArgument(path + ": corrupt checkpoint metadata at '" + line + "'");
    }
  }
  if (node_features != kNodeFeatures || shape_features != kShapeFeatures) {
    return InvalidArgument(path + " was written for " + std::to_string(node_features) +
                           " node and " + std::to_string(shape_features) +
                           " shape features; this build uses " + std::to_string(kNodeFeatures) +
                           " and " + std::to_string(kShapeFeatures) +
                           " (an incompatible version of rewire)");
  }
  return m;
}

Status FlushFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return Internal("cannot reopen " + path + " to flush it");
  const int rc = ::fsync(fd);
  ::close(fd);
  return rc == 0 ? Status::Ok() : Internal("fsync failed on " + path);
}

}  // namespace

namespace {
/// Module::load replaces each parameter with whatever tensor the archive holds, shape included;
/// this loads and then insists every shape is unchanged, restoring the old weights otherwise.
Status LoadSameShape(GnnPolicy& policy, torch::serialize::InputArchive& archive,
                     const std::string& what) {
  std::vector<torch::Tensor> saved;
  for (const torch::Tensor& p : policy->parameters()) saved.push_back(p.detach().clone());
  policy->load(archive);
  const std::vector<torch::Tensor> now = policy->parameters();
  for (size_t i = 0; i < now.size(); ++i) {
    if (now[i].sizes() != saved[i].sizes()) {
      torch::NoGradGuard no_grad;
      for (size_t k = 0; k < now.size(); ++k) now[k].set_(saved[k]);
      return InvalidArgument(what + " holds weights of another shape than this policy's");
    }
  }
  return Status::Ok();
}
}  // namespace

Status SaveCheckpoint(const std::string& path, GnnPolicy& policy,
                      torch::optim::Optimizer* optimizer, const CheckpointMeta& meta,
                      const ArchiveWriter& extra) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path target(path);
  if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
  const std::string tmp = path + ".tmp";
  try {
    torch::serialize::OutputArchive archive;
    archive.write("meta", c10::IValue(MetaText(meta)));
    torch::serialize::OutputArchive weights;
    policy->save(weights);
    archive.write("policy", weights);
    if (optimizer) {
      torch::serialize::OutputArchive opt;
      optimizer->save(opt);
      archive.write("optimizer", opt);
    }
    if (extra) extra(archive);
    archive.save_to(tmp);
  } catch (const c10::Error& e) {
    return Internal("cannot write checkpoint " + tmp + ": " + e.what_without_backtrace());
  }
  REWIRE_RETURN_IF_ERROR(FlushFile(tmp));
  fs::rename(tmp, target, ec);
  if (ec) return Internal("cannot rename " + tmp + " to " + path + ": " + ec.message());
  return Status::Ok();
}

StatusOr<CheckpointMeta> LoadCheckpoint(const std::string& path, GnnPolicy& policy,
                                        torch::optim::Optimizer* optimizer,
                                        const ArchiveReader& extra) {
  if (!std::filesystem::is_regular_file(path)) return NotFound("checkpoint " + path + " not found");
  torch::serialize::InputArchive archive;
  CheckpointMeta meta;
  try {
    archive.load_from(path);
    c10::IValue text;
    if (!archive.try_read("meta", text) || !text.isString()) {
      return InvalidArgument(path + " is not a rewire policy checkpoint (no metadata)");
    }
    REWIRE_ASSIGN_OR_RETURN(meta, ParseMeta(path, text.toStringRef()));
  } catch (const c10::Error& e) {
    return InvalidArgument(path + " is not a rewire policy checkpoint: " +
                           std::string(e.what_without_backtrace()).substr(0, 200));
  }
  if (policy.is_empty()) policy = GnnPolicy(meta.shape);
  REWIRE_RETURN_IF_ERROR(CheckShape(path, meta.shape, policy->shape()));
  try {
    torch::serialize::InputArchive weights;
    archive.read("policy", weights);
    REWIRE_RETURN_IF_ERROR(LoadSameShape(policy, weights, path));
    if (optimizer) {
      torch::serialize::InputArchive opt;
      if (!archive.try_read("optimizer", opt))
        return InvalidArgument(path + " holds no optimizer state to resume from");
      optimizer->load(opt);
    }
    if (extra) REWIRE_RETURN_IF_ERROR(extra(archive));
  } catch (const c10::Error& e) {
    return InvalidArgument("cannot load " + path + ": " +
                           std::string(e.what_without_backtrace()).substr(0, 200));
  }
  return meta;
}

StatusOr<std::string> PolicyWeightsBytes(GnnPolicy& policy) {
  try {
    torch::serialize::OutputArchive archive;
    policy->save(archive);
    std::ostringstream os;
    archive.save_to(os);
    return os.str();
  } catch (const c10::Error& e) {
    return Internal(std::string("cannot serialise the policy: ") + e.what_without_backtrace());
  }
}

Status LoadPolicyWeightsBytes(GnnPolicy& policy, const std::string& bytes) {
  try {
    std::istringstream is(bytes);
    torch::serialize::InputArchive archive;
    archive.load_from(is);
    REWIRE_RETURN_IF_ERROR(LoadSameShape(policy, archive, "the weights"));
  } catch (const c10::Error& e) {
    return InvalidArgument("not policy weights of this shape: " +
                           std::string(e.what_without_backtrace()).substr(0, 200));
  }
  return Status::Ok();
}

Status CheckShape(const std::string& path, const GnnShape& have, const GnnShape& want) {
  auto differs = [&](const char* key, int a, int b) -> Status {
    if (a == b) return Status::Ok();
    return InvalidArgument("checkpoint " + path + " has gnn." + key + " = " + std::to_string(a) +
                           ", the config asks for " + std::to_string(b) +
                           " (an incompatible policy)");
  };
  REWIRE_RETURN_IF_ERROR(differs("hidden", have.hidden, want.hidden));
  REWIRE_RETURN_IF_ERROR(differs("layers", have.layers, want.layers));
  return differs("heads", have.heads, want.heads);
}

std::string CheckpointAgent(const std::string& path) {
  if (!LooksLikePolicyCheckpoint(path)) return "";
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(path);
    c10::IValue text;
    if (!archive.try_read("meta", text) || !text.isString()) return "";
    const StatusOr<CheckpointMeta> meta = ParseMeta(path, text.toStringRef());
    if (!meta.ok()) return "";
    return meta->agent.empty() ? "ppo-gnn" : meta->agent;
  } catch (const c10::Error&) {
    return "";
  }
}

bool LooksLikePolicyCheckpoint(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  in.read(magic, sizeof magic);
  // LibTorch archives are zip files.
  return in.gcount() == 4 && magic[0] == 'P' && magic[1] == 'K' && magic[2] == 3 && magic[3] == 4;
}

}  // namespace rewire
