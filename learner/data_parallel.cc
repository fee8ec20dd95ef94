// Data-parallel learners: one flattened all-reduce of the gradients per minibatch over Gloo
// (LibTorch c10d); learner/rendezvous.cc reads where a rank stands from the environment. See
// data_parallel.h for the rule every caller must keep (the same collectives on every rank).

#include "learner/data_parallel.h"
#include "graph/clock.h"
#include "learner/nccl_comm.h"

#include <netdb.h>
#include <sys/socket.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <utility>

#if defined(USE_C10D_GLOO)
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#endif

// ---------------------------------------------------------------------------- LibTorch versions
// The one place that looks at TORCH_VERSION_*. The c10d calls below are spelled the same in
// 1.13 and 2.x (read against 1.13's and 2.7's headers; built here with 1.13 only):
// ProcessGroupGloo(store, rank, size, options), Options::create(timeout) with `devices` and
// `threads`, createDeviceFor{Hostname,Interface} and createDefaultDevice (later 2.x add a defaulted
// `lazyInit`), allreduce/broadcast/barrier returning c10::intrusive_ptr<c10d::Work>, and
// TCPStore(host, TCPStoreOptions). What changed underneath: in 2.x ProcessGroupGloo is a
// c10d::Backend (1.13: a c10d::ProcessGroup), which is why this file names only ProcessGroupGloo,
// through GlooGroup; from 2.4 the TCPStore server runs on libuv by default (it binds port 0 too);
// and 2.x's Optimizer::zero_grad() leaves gradients undefined (1.13 zeroes them), which
// AllReduceGradients treats as zeros. A release that renames one of these gets its #if here.
#if TORCH_VERSION_MAJOR < 1 || (TORCH_VERSION_MAJOR == 1 && TORCH_VERSION_MINOR < 13)
#error "learner/data_parallel.cc needs LibTorch 1.13 or newer (c10d::TCPStoreOptions, c10d::Work)"
#endif

namespace rewire {
namespace {

#if defined(USE_C10D_GLOO)
using GlooGroup = c10d::ProcessGroupGloo;  // 2.x: a c10d::Backend; 1.13: a c10d::ProcessGroup
#endif

bool IsLoopback(const std::string& host) {
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
}

/// A c10d/Gloo message on one line (Status messages are one line).
std::string OneLine(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  std::string out;
  for (char c : s) {
    if (c == '\n') {
      out += "; ";
    } else {
      out += c;
    }
  }
  return out;
}

/// The code of a failed c10d/Gloo call, from its message: a wait that ran out is
/// DeadlineExceeded, a peer that went away (connection closed, reset or refused) Unavailable,
/// anything else Internal.
StatusCode FailureCode(const std::string& message) {
  std::string m = message;
  std::transform(m.begin(), m.end(), m.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const char* t : {"timed out", "timeout"}) {
    if (m.find(t) != std::string::npos) return StatusCode::kDeadlineExceeded;
  }
  for (const char* p : {"connection closed", "connection reset", "connection refused",
                        "closed by peer", "broken pipe", "socket closed"}) {
    if (m.find(p) != std::string::npos) return StatusCode::kUnavailable;
  }
  return StatusCode::kInternal;
}

}  // namespace

std::vector<std::vector<size_t>> CycleMinibatches(std::vector<std::vector<size_t>> local,
                                                  int64_t count) {
  const size_t n = static_cast<size_t>(std::max<int64_t>(count, 0));
  if (local.empty()) return std::vector<std::vector<size_t>>(n);
  const size_t have = local.size();
  if (have >= n) {
    local.resize(n);
    return local;
  }
  local.reserve(n);
  for (size_t i = have; i < n; ++i) local.push_back(local[i % have]);
  return local;
}

// ---------------------------------------------------------------------------- the group

struct GradientAllReducer::Impl {
  Rendezvous rv;
  DataParallelOptions options;
  int port = 0;
  Status broken;  // the first failed collective; every later call returns it
  /// Elements of each parameter list broadcast so far (an agent with two models broadcasts two).
  std::vector<int64_t> broadcast_numels;
  /// Records a broadcast of `total` elements (as the last one).
  void RememberBroadcast(int64_t total) {
    auto it = std::find(broadcast_numels.begin(), broadcast_numels.end(), total);
    if (it != broadcast_numels.end()) broadcast_numels.erase(it);
    broadcast_numels.push_back(total);
  }
  torch::Tensor grad_buffer;  // reused between AllReduceGradients calls of the same size
  int64_t allreduces_done = 0, collectives_done = 0, allreduce_bytes = 0;
  double allreduce_seconds = 0;
#if defined(USE_C10D_GLOO)
  c10::intrusive_ptr<c10d::Store> store;  // TCPStore (rank 0 serves it) behind a PrefixStore
  c10::intrusive_ptr<GlooGroup> group;    // built by Connect(); destroyed before the store
#endif
  std::unique_ptr<NcclComm> nccl;  // CUDA tensors' communicator, made by the first CUDA collective

  std::string Who() const {
    return "rank " + std::to_string(rv.rank) + " of " + std::to_string(rv.world_size);
  }

  std::string Timeout() const {
    const auto ms = options.timeout.count();
    return ms % 1000 == 0 ? std::to_string(ms / 1000) + "s" : std::to_string(ms) + "ms";
  }

  std::string StoreError(const std::string& message) const {
    return "data-parallel store at " + rv.master_addr + ":" + std::to_string(rv.master_port) +
           " (" + Who() + (rv.rank == 0 ? ", serving it" : ", connecting to it") + ", timeout " +
           Timeout() + "): " + OneLine(message);
  }

  /// Marks the group unusable: after a failed collective the ranks disagree on what comes next.
  /// The code says why (FailureCode): DeadlineExceeded when a rank did not join in time,
  /// Unavailable when a rank went away.
  Status Fail(const std::string& what, const std::string& message, StatusCode code) {
    broken = Status(code, "data-parallel " + what + " failed on " + Who() + " (timeout " +
                              Timeout() + "): " + OneLine(message));
    return broken;
  }
  Status Fail(const std::string& what, const std::string& message) {
    return Fail(what, message, FailureCode(message));
  }
  Status Fail(const std::string& what, const Status& status) {
    return Fail(what, status.message(), status.code());
  }

  Status Connect();
  /// Every rank counts itself in the store and waits (at most the timeout) for WORLD_SIZE ranks,
  /// before Gloo's mesh opens a socket per peer (closed one at a time: a WORLD_SIZE far beyond
  /// the ranks that exist would outlast the timeout by far, and 2^31-1 never end).
  Status AwaitRanks();
  /// Runs one collective started by `start` and waits for it (at most the timeout).
  template <typename Start>
  Status Run(const std::string& what, Start&& start);
  /// Element-wise all-reduce of a few doubles.
  StatusOr<std::vector<double>> AllReduceDoubles(std::vector<double> values, ReduceKind kind);

  /// The NCCL communicator for CUDA device `device`, joined on first use: rank 0 puts a fresh
  /// ncclUniqueId into the store, the others read it (waiting at most the timeout).
  StatusOr<NcclComm*> Nccl(const torch::Device& device);
  /// In-place sum of a flat buffer over the ranks: Gloo for a CPU tensor, NCCL for a CUDA one.
  Status AllReduceBuffer(const std::string& what, torch::Tensor& buffer);
  /// In-place broadcast of a flat buffer from `root`: Gloo or NCCL, as above.
  Status BroadcastBuffer(torch::Tensor& buffer, int root);
};

namespace {

StatusOr<NcclType> NcclTypeOf(const torch::Tensor& t) {
  if (t.scalar_type() == torch::kFloat32) return NcclType::kFloat32;
  if (t.scalar_type() == torch::kFloat64) return NcclType::kFloat64;
  return Unimplemented(std::string("NCCL collectives take float32 or float64 tensors, got ") +
                       c10::toString(t.scalar_type()));
}

}  // namespace

StatusOr<NcclComm*> GradientAllReducer::Impl::Nccl(const torch::Device& device) {
  if (!broken.ok()) return broken;
  const int index = device.has_index() ? device.index() : 0;
  if (nccl) {
    if (nccl->device_index() != index) {
      return InvalidArgument("data-parallel: CUDA tensors on device " + std::to_string(index) +
                             ", but this rank's NCCL communicator is on device " +
                             std::to_string(nccl->device_index()));
    }
    return nccl.get();
  }
#if defined(USE_C10D_GLOO)
  REWIRE_RETURN_IF_ERROR(Connect());
  std::string id;
  const std::string key = "nccl/unique_id";
  if (rv.rank == 0) {
    StatusOr<std::string> fresh = NcclComm::NewUniqueId();
    if (!fresh.ok()) return Fail("NCCL setup", fresh.status());
    id = *fresh;
  }
  try {
    if (rv.rank == 0) {
      store->set(key, std::vector<uint8_t>(id.begin(), id.end()));
    } else {
      const std::vector<uint8_t> bytes = store->get(key);
      id.assign(bytes.begin(), bytes.end());
    }
  } catch (const c10::Error& e) {
    return Fail("NCCL setup (sharing the unique id)", e.what_without_backtrace());
  } catch (const std::exception& e) {
    return Fail("NCCL setup (sharing the unique id)", e.what());
  }
  StatusOr<std::unique_ptr<NcclComm>> comm =
      NcclComm::Init(id, rv.rank, rv.world_size, index, options.timeout);
  if (!comm.ok()) return Fail("NCCL setup", comm.status());
  nccl = std::move(comm).value();
  return nccl.get();
#else
  return Unimplemented(
      "data-parallel CUDA tensors: this LibTorch has no c10d store (USE_C10D_GLOO) to share "
      "NCCL's unique id through");
#endif
}

Status GradientAllReducer::Impl::AllReduceBuffer(const std::string& what, torch::Tensor& buffer) {
  if (buffer.is_cuda()) {
    REWIRE_ASSIGN_OR_RETURN(NcclType type, NcclTypeOf(buffer));
    REWIRE_ASSIGN_OR_RETURN(NcclComm * comm, Nccl(buffer.device()));
    const Status s =
        comm->AllReduceSum(buffer.data_ptr(), static_cast<size_t>(buffer.numel()), type);
    if (!s.ok()) return Fail(what, s);
    ++collectives_done;
    return Status::Ok();
  }
#if defined(USE_C10D_GLOO)
  return Run(what, [&](GlooGroup& g) {
    std::vector<torch::Tensor> tensors{buffer};
    c10d::AllreduceOptions opts;
    opts.reduceOp = c10d::ReduceOp::SUM;
    return g.allreduce(tensors, opts);
  });
#else
  return Connect();
#endif
}

Status GradientAllReducer::Impl::BroadcastBuffer(torch::Tensor& buffer, int root) {
  if (buffer.is_cuda()) {
    REWIRE_ASSIGN_OR_RETURN(NcclType type, NcclTypeOf(buffer));
    REWIRE_ASSIGN_OR_RETURN(NcclComm * comm, Nccl(buffer.device()));
    const Status s =
        comm->Broadcast(buffer.data_ptr(), static_cast<size_t>(buffer.numel()), type, root);
    if (!s.ok()) return Fail("broadcast", s);
    ++collectives_done;
    return Status::Ok();
  }
#if defined(USE_C10D_GLOO)
  return Run("broadcast", [&](GlooGroup& g) {
    std::vector<torch::Tensor> tensors{buffer};
    c10d::BroadcastOptions opts;
    opts.rootRank = root;
    return g.broadcast(tensors, opts);
  });
#else
  return Connect();
#endif
}

#if defined(USE_C10D_GLOO)
namespace {

c10d::ReduceOp ToReduceOp(ReduceKind kind) {
  switch (kind) {
    case ReduceKind::kMax:
      return c10d::ReduceOp::MAX;
    case ReduceKind::kMin:
      return c10d::ReduceOp::MIN;
    case ReduceKind::kSum:
    case ReduceKind::kMean:
      break;
  }
  return c10d::ReduceOp::SUM;
}

/// Gloo's network devices: the configured interfaces (comma-separated), else loopback for a
/// loopback master, else the address this host's name resolves to (c10d's default).
std::vector<std::shared_ptr<::gloo::transport::Device>> MakeDevices(
    const Rendezvous& rv, const DataParallelOptions& options) {
  std::string interfaces = options.gloo_interface;
  if (interfaces.empty()) {
    if (const char* env = std::getenv("GLOO_SOCKET_IFNAME")) interfaces = env;
  }
  std::vector<std::shared_ptr<::gloo::transport::Device>> devices;
  size_t start = 0;
  while (!interfaces.empty() && start <= interfaces.size()) {
    const size_t comma = std::min(interfaces.find(',', start), interfaces.size());
    const std::string name = interfaces.substr(start, comma - start);
    if (!name.empty()) devices.push_back(GlooGroup::createDeviceForInterface(name));
    start = comma + 1;
  }
  if (devices.empty()) {
    devices.push_back(IsLoopback(rv.master_addr) ? GlooGroup::createDeviceForHostname("127.0.0.1")
                                                 : GlooGroup::createDefaultDevice());
  }
  return devices;
}

}  // namespace

Status GradientAllReducer::Impl::AwaitRanks() {
  const std::string what = "rendezvous of " + std::to_string(rv.world_size) + " ranks";
  try {
    if (store->add("joined", 1) == rv.world_size) store->set("all_joined", std::vector<uint8_t>{1});
    store->wait({"all_joined"}, options.timeout);
  } catch (const std::exception& e) {
    const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
    try {
      const int64_t joined = store->add("joined", 0);
      return Fail(what,
                  std::to_string(joined) + " of " + std::to_string(rv.world_size) +
                      " ranks joined within the timeout; check WORLD_SIZE (or SLURM_NTASKS) and "
                      "that every rank started",
                  StatusCode::kDeadlineExceeded);
    } catch (const std::exception&) {
      // The store is gone: rank 0 hosts it, and it gave up waiting (its timeout ran out a moment
      // before this rank's) or died.
      const std::string cause = c10_error ? c10_error->what_without_backtrace() : e.what();
      return Fail(what,
                  "the master (rank 0) closed the store before " + std::to_string(rv.world_size) +
                      " ranks joined: it gave up waiting or died (" + cause + ")",
                  rv.rank == 0 ? FailureCode(cause) : StatusCode::kUnavailable);
    }
  }
  return Status::Ok();
}

Status GradientAllReducer::Impl::Connect() {
  if (!broken.ok()) return broken;
  if (group || rv.world_size == 1) return Status::Ok();
  REWIRE_RETURN_IF_ERROR(AwaitRanks());
  try {
    auto gloo_options = GlooGroup::Options::create(options.timeout);
    gloo_options->devices = MakeDevices(rv, options);
    gloo_options->threads = static_cast<int>(gloo_options->devices.size());
    // Blocks until every rank has published its address in the store (at most the timeout).
    group = c10::make_intrusive<GlooGroup>(store, rv.rank, rv.world_size, gloo_options);
  } catch (const std::exception& e) {
    const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
    return Fail("rendezvous of " + std::to_string(rv.world_size) + " ranks",
                c10_error ? c10_error->what_without_backtrace() : e.what());
  }
  return Status::Ok();
}

template <typename Start>
Status GradientAllReducer::Impl::Run(const std::string& what, Start&& start) {
  REWIRE_RETURN_IF_ERROR(Connect());
  try {
    c10::intrusive_ptr<c10d::Work> work = start(*group);
    work->wait(options.timeout);
  } catch (const c10::Error& e) {
    return Fail(what, e.what_without_backtrace());
  } catch (const std::exception& e) {
    return Fail(what, e.what());
  }
  ++collectives_done;
  return Status::Ok();
}

#else  // no Gloo in this LibTorch

Status GradientAllReducer::Impl::Connect() {
  if (rv.world_size == 1) return Status::Ok();
  return Unimplemented(
      "this LibTorch was built without Gloo (USE_C10D_GLOO): data-parallel learners need it");
}

template <typename Start>
Status GradientAllReducer::Impl::Run(const std::string& what, Start&& start) {
  return Connect();
}

#endif  // USE_C10D_GLOO

StatusOr<std::vector<double>> GradientAllReducer::Impl::AllReduceDoubles(std::vector<double> values,
                                                                         ReduceKind kind) {
  if (!broken.ok()) return broken;
  if (rv.world_size == 1) {
    ++collectives_done;
    return values;
  }
  torch::Tensor t = torch::tensor(values, torch::kFloat64);
#if defined(USE_C10D_GLOO)
  REWIRE_RETURN_IF_ERROR(
      Run("all-reduce of " + std::to_string(values.size()) + " values", [&](GlooGroup& g) {
        std::vector<torch::Tensor> tensors{t};
        c10d::AllreduceOptions opts;
        opts.reduceOp = ToReduceOp(kind);
        return g.allreduce(tensors, opts);
      }));
#else
  REWIRE_RETURN_IF_ERROR(Connect());
#endif
  auto acc = t.accessor<double, 1>();
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = acc[static_cast<int64_t>(i)] / (kind == ReduceKind::kMean ? rv.world_size : 1);
  }
  return values;
}

// ---------------------------------------------------------------------------- public API

GradientAllReducer::GradientAllReducer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GradientAllReducer::~GradientAllReducer() = default;

StatusOr<std::unique_ptr<GradientAllReducer>> GradientAllReducer::Create(
    const Rendezvous& rv, const DataParallelOptions& options) {
  if (rv.world_size < 1)
    return InvalidArgument("world size must be positive, got " + std::to_string(rv.world_size));
  if (rv.rank < 0 || rv.rank >= rv.world_size) {
    return InvalidArgument("rank " + std::to_string(rv.rank) + " is out of range for world size " +
                           std::to_string(rv.world_size));
  }
  if (options.timeout.count() <= 0)
    return InvalidArgument("the data-parallel timeout must be positive");
  auto impl = std::make_unique<Impl>();
  impl->rv = rv;
  impl->options = options;
  if (rv.world_size == 1)
    return std::unique_ptr<GradientAllReducer>(new GradientAllReducer(std::move(impl)));

  if (rv.master_port < 0 || rv.master_port > 65535) {
    return InvalidArgument("master port must be in 0..65535, got " +
                           std::to_string(rv.master_port));
  }
  if (rv.master_port == 0 && rv.rank != 0) {
    return InvalidArgument("rank " + std::to_string(rv.rank) +
                           " needs the master's port; port 0 (pick a free one) is for rank 0 only");
  }
  if (rv.master_addr.empty()) return InvalidArgument("the master address is empty");
  // A name that does not resolve is an error now: the store would retry it until the timeout.
  {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const int rc = ::getaddrinfo(rv.master_addr.c_str(), nullptr, &hints, &found);
    if (found) ::freeaddrinfo(found);
    if (rc != 0) {
      return InvalidArgument("the master address '" + rv.master_addr + "' does not resolve (" +
                             ::gai_strerror(rc) + ") on " + impl->Who() +
                             ": give MASTER_ADDR (or distributed.advertise) as an IP address or a "
                             "host name this machine resolves");
    }
  }
#if defined(USE_C10D_GLOO)
  try {
    c10d::TCPStoreOptions so;
    so.port = static_cast<std::uint16_t>(rv.master_port);
    so.isServer = rv.rank == 0;
    so.waitWorkers = false;  // the ranks meet in Connect(); rank 0 returns at once with its port
    so.timeout = options.timeout;
    auto tcp = c10::make_intrusive<c10d::TCPStore>(rv.master_addr, so);
    impl->port = tcp->getPort();
    impl->store = c10::make_intrusive<c10d::PrefixStore>("rewire/learners", tcp);
  } catch (const c10::Error& e) {
    // Rank 0 could not serve the store (Internal); another rank could not reach it (Unavailable).
    return Status(rv.rank == 0 ? StatusCode::kInternal : StatusCode::kUnavailable,
                  impl->StoreError(e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return Status(rv.rank == 0 ? StatusCode::kInternal : StatusCode::kUnavailable,
                  impl->StoreError(e.what()));
  }
  return std::unique_ptr<GradientAllReducer>(new GradientAllReducer(std::move(impl)));
#else
  return impl->Connect();
#endif
}

Status GradientAllReducer::Connect() { return impl_->Connect(); }

Status GradientAllReducer::AllReduceGradients(const std::vector<torch::Tensor>& params) {
  Impl& d = *impl_;
  if (!d.broken.ok()) return d.broken;
  if (params.empty()) return InvalidArgument("AllReduceGradients: no parameters");
  int64_t total = 0;
  const torch::Tensor& first = params.front();
  for (size_t i = 0; i < params.size(); ++i) {
    const torch::Tensor& p = params[i];
    if (!p.defined())
      return InvalidArgument("AllReduceGradients: parameter " + std::to_string(i) +
                             " is undefined");
    if (p.scalar_type() != first.scalar_type() || p.device() != first.device()) {
      return InvalidArgument("AllReduceGradients: parameter " + std::to_string(i) + " is " +
                             std::string(c10::toString(p.scalar_type())) + " on " +
                             p.device().str() + ", parameter 0 is " +
                             std::string(c10::toString(first.scalar_type())) + " on " +
                             first.device().str() + " (one buffer needs one dtype and device)");
    }
    if (p.grad().defined() && p.grad().is_sparse()) {
      return InvalidArgument("AllReduceGradients: parameter " + std::to_string(i) +
                             " has a sparse gradient");
    }
    total += p.numel();
  }
  if (!c10::isFloatingType(first.scalar_type())) {
    return InvalidArgument("AllReduceGradients: parameters must be floating point, got " +
                           std::string(c10::toString(first.scalar_type())));
  }
  if (!d.broadcast_numels.empty() && std::find(d.broadcast_numels.begin(), d.broadcast_numels.end(),
                                               total) == d.broadcast_numels.end()) {
    return InvalidArgument("AllReduceGradients: " + std::to_string(total) +
                           " elements, but no Broadcast had as many (the last had " +
                           std::to_string(d.broadcast_numels.back()) + ")");
  }
  const int64_t n_params = static_cast<int64_t>(params.size());
  if (d.rv.world_size == 1) {
    ++d.allreduces_done;
    ++d.collectives_done;
    return Status::Ok();
  }
  const auto start = Clock::now();
  torch::NoGradGuard no_grad;
  // Layout: [every gradient, flattened | one "defined" flag per parameter]. The flags are
  // summed with the gradients in the same all-reduce, so every rank learns which gradients
  // exist anywhere without a second collective.
  const int64_t size = total + n_params;
  if (!d.grad_buffer.defined() || d.grad_buffer.numel() != size ||
      d.grad_buffer.scalar_type() != first.scalar_type()) {
    d.grad_buffer = torch::empty({size}, first.options().requires_grad(false));
  }
  torch::Tensor buffer = d.grad_buffer;
  std::vector<float> defined_here(params.size());
  int64_t offset = 0;
  for (int64_t i = 0; i < n_params; ++i) {
    const torch::Tensor& p = params[i];
    torch::Tensor slice = buffer.narrow(0, offset, p.numel());
    const torch::Tensor& g = p.grad();
    if (g.defined()) {
      slice.view(p.sizes()).copy_(g);
    } else {
      slice.zero_();
    }
    defined_here[i] = g.defined() ? 1.0f : 0.0f;
    offset += p.numel();
  }
  buffer.narrow(0, total, n_params).copy_(torch::tensor(defined_here));

  // Gloo for CPU buffers, NCCL for CUDA ones (the scalar collectives stay on Gloo).
  REWIRE_RETURN_IF_ERROR(d.AllReduceBuffer("gradient all-reduce", buffer));

  buffer.narrow(0, 0, total).div_(d.rv.world_size);
  const torch::Tensor flags = buffer.narrow(0, total, n_params).to(torch::kCPU, torch::kFloat64);
  auto defined_on = flags.accessor<double, 1>();
  offset = 0;
  for (int64_t i = 0; i < n_params; ++i) {
    const torch::Tensor& p = params[i];
    torch::Tensor mean = buffer.narrow(0, offset, p.numel()).view(p.sizes());
    offset += p.numel();
    if (defined_on[i] == 0) continue;  // undefined on every rank: stays undefined everywhere
    if (p.grad().defined()) {
      p.mutable_grad().copy_(mean);
    } else {
      p.mutable_grad() = mean.clone();
    }
  }
  ++d.allreduces_done;
  d.allreduce_bytes += total * static_cast<int64_t>(buffer.element_size());
  d.allreduce_seconds += SecondsSince(start);
  return Status::Ok();
}

Status GradientAllReducer::Broadcast(std::vector<torch::Tensor>& params, int root) {
  Impl& d = *impl_;
  if (!d.broken.ok()) return d.broken;
  if (root < 0 || root >= d.rv.world_size) {
    return InvalidArgument("Broadcast: root " + std::to_string(root) +
                           " is out of range for world size " + std::to_string(d.rv.world_size));
  }
  if (params.empty()) return InvalidArgument("Broadcast: no parameters");
  int64_t total = 0;
  const torch::Tensor& first = params.front();
  for (size_t i = 0; i < params.size(); ++i) {
    const torch::Tensor& p = params[i];
    if (!p.defined())
      return InvalidArgument("Broadcast: parameter " + std::to_string(i) + " is undefined");
    if (p.scalar_type() != first.scalar_type() || p.device() != first.device()) {
      return InvalidArgument("Broadcast: parameter " + std::to_string(i) + " is " +
                             std::string(c10::toString(p.scalar_type())) + " on " +
                             p.device().str() + ", parameter 0 is " +
                             std::string(c10::toString(first.scalar_type())) + " on " +
                             first.device().str() + " (one buffer needs one dtype and device)");
    }
    total += p.numel();
  }
  if (d.rv.world_size == 1) {
    d.RememberBroadcast(total);
    ++d.collectives_done;
    return Status::Ok();
  }
  // Every rank must broadcast the same number of elements; a mismatch would corrupt or hang the
  // broadcast, so agree first: max(n) and max(-n) give every rank the largest and smallest n.
  StatusOr<std::vector<double>> sizes = d.AllReduceDoubles(
      {static_cast<double>(total), -static_cast<double>(total)}, ReduceKind::kMax);
  if (!sizes.ok()) return sizes.status();
  const double largest = (*sizes)[0], smallest = -(*sizes)[1];
  if (largest != smallest) {
    return InvalidArgument("Broadcast: the ranks' parameters differ in size (" + d.Who() + " has " +
                           std::to_string(total) + " elements; the ranks have between " +
                           std::to_string(static_cast<int64_t>(smallest)) + " and " +
                           std::to_string(static_cast<int64_t>(largest)) + ")");
  }

  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> flat;
  flat.reserve(params.size());
  for (const torch::Tensor& p : params) flat.push_back(p.detach().reshape({-1}));
  torch::Tensor buffer = torch::cat(flat);
  REWIRE_RETURN_IF_ERROR(d.BroadcastBuffer(buffer, root));
  int64_t offset = 0;
  for (torch::Tensor& p : params) {
    p.copy_(buffer.narrow(0, offset, p.numel()).view(p.sizes()));
    offset += p.numel();
  }
  d.RememberBroadcast(total);
  return Status::Ok();
}

Status GradientAllReducer::Barrier() {
  Impl& d = *impl_;
  if (!d.broken.ok()) return d.broken;
  if (d.rv.world_size == 1) {
    ++d.collectives_done;
    return Status::Ok();
  }
#if defined(USE_C10D_GLOO)
  return d.Run("barrier", [&](GlooGroup& g) { return g.barrier(c10d::BarrierOptions()); });
#else
  return d.Connect();
#endif
}

StatusOr<double> GradientAllReducer::AllReduceScalar(double value, ReduceKind kind) {
  StatusOr<std::vector<double>> r = impl_->AllReduceDoubles({value}, kind);
  if (!r.ok()) return r.status();
  return (*r)[0];
}

StatusOr<int64_t> GradientAllReducer::MinibatchesPerRank(int64_t local_samples,
                                                         int64_t minibatch_size,
                                                         GradientAllReducer& reducer) {
  // Invalid arguments still join the all-reduce (with a flag), so that every rank returns the
  // error instead of the others waiting for a rank that left.
  std::string local_error;
  if (minibatch_size < 1)
    local_error = "minibatch_size must be positive, got " + std::to_string(minibatch_size);
  if (local_samples < 0)
    local_error = "local_samples must be non-negative, got " + std::to_string(local_samples);
  const int64_t local =
      local_error.empty() ? (local_samples + minibatch_size - 1) / minibatch_size : 0;
  StatusOr<std::vector<double>> r = reducer.impl_->AllReduceDoubles(
      {static_cast<double>(local), local_error.empty() ? 0.0 : 1.0}, ReduceKind::kMax);
  if (!r.ok()) return r.status();
  if (!local_error.empty()) return InvalidArgument("MinibatchesPerRank: " + local_error);
  if ((*r)[1] != 0)
    return InvalidArgument("MinibatchesPerRank: another rank passed invalid arguments");
  return static_cast<int64_t>((*r)[0]);
}

int GradientAllReducer::rank() const { return impl_->rv.rank; }
int GradientAllReducer::world_size() const { return impl_->rv.world_size; }
int GradientAllReducer::port() const { return impl_->port; }
int64_t GradientAllReducer::allreduces_done() const { return impl_->allreduces_done; }
int64_t GradientAllReducer::collectives_done() const { return impl_->collectives_done; }
int64_t GradientAllReducer::allreduce_bytes() const { return impl_->allreduce_bytes; }
double GradientAllReducer::allreduce_seconds() const { return impl_->allreduce_seconds; }

}  // namespace rewire
