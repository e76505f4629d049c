#include "rpc.h"

#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>

#include "ggml-rpc.h"

#ifndef _WIN32
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#endif

namespace llamad {

namespace {

// ggml-rpc's wire constants (ggml/src/ggml-rpc: RPC_CMD_HELLO is fixed at 14 across versions; the HELLO request is
// RPC_CONN_CAPS_SIZE = 24 capability bytes, the response major/minor/patch/padding plus the same 24 bytes).
constexpr uint8_t kCmdHello = 14;
constexpr size_t kCapsSize = 24;
constexpr size_t kHelloResponseSize = 4 + kCapsSize;

std::mutex endpoints_mutex;
std::map<std::string, int> endpoints_in_use;

bool SplitEndpoint(const std::string& endpoint, std::string& host, std::string& port) {
  // As ggml-rpc's parse_endpoint (which splits at the first ':' and connects over IPv4 only): "host:port".
  const size_t colon = endpoint.find(':');
  if (colon == std::string::npos || colon == 0 || endpoint.find(':', colon + 1) != std::string::npos) return false;
  host = endpoint.substr(0, colon);
  port = endpoint.substr(colon + 1);
  if (port.empty() || port.size() > 5) return false;
  for (char c : port) {
    if (c < '0' || c > '9') return false;
  }
  const int value = std::stoi(port);
  return value >= 1 && value <= 65535;
}

#ifndef _WIN32
using Clock = std::chrono::steady_clock;

// Waits for `events` on `fd` until `deadline`; false on timeout or error.
bool WaitFor(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    const int r = poll(&p, 1, static_cast<int>(left));
    if (r > 0) return true;
    if (r == 0) return false;
    if (errno != EINTR) return false;
  }
}

// Sends / receives exactly `size` bytes before `deadline`; '' or the reason.
std::string SendAll(int fd, const uint8_t* data, size_t size, Clock::time_point deadline) {
  while (size > 0) {
    if (!WaitFor(fd, POLLOUT, deadline)) return "timed out sending the handshake";
    const ssize_t n = send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      return std::strerror(errno);
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return "";
}

std::string RecvAll(int fd, uint8_t* data, size_t size, Clock::time_point deadline) {
  while (size > 0) {
    if (!WaitFor(fd, POLLIN, deadline)) {
      return "no answer to the handshake (the worker may be serving another client: rpc-server takes one at a time)";
    }
    const ssize_t n = recv(fd, data, size, 0);
    if (n == 0) return "the worker closed the connection during the handshake (not an rpc-server of this version?)";
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      return std::strerror(errno);
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return "";
}

// Non-blocking connect to one address before `deadline`: the socket, or -1 with `reason` set.
int ConnectOne(const addrinfo* ai, Clock::time_point deadline, std::string& reason) {
  const int fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
  if (fd < 0) {
    reason = std::strerror(errno);
    return -1;
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK);
  if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
    if (errno != EINPROGRESS) {
      reason = std::strerror(errno);
      close(fd);
      return -1;
    }
    if (!WaitFor(fd, POLLOUT, deadline)) {
      reason = "connection timed out";
      close(fd);
      return -1;
    }
    int error = 0;
    socklen_t length = sizeof(error);
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
    if (error != 0) {
      reason = std::strerror(error);
      close(fd);
      return -1;
    }
  }
  return fd;
}
#endif

}  // namespace

bool IsRpcEndpoint(const std::string& endpoint) {
  std::string host;
  std::string port;
  return SplitEndpoint(endpoint, host, port);
}

std::string ProbeRpcServer(const std::string& endpoint, int timeout_ms) {
  std::string host;
  std::string port;
  if (!SplitEndpoint(endpoint, host, port)) return "not a host:port endpoint";
#ifdef _WIN32
  (void)timeout_ms;
  return "";  // not probed on Windows: ggml-rpc's own connect decides
#else
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  addrinfo hints{};
  hints.ai_family = AF_INET;  // ggml-rpc connects over IPv4 only
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int gai = getaddrinfo(host.c_str(), port.c_str(), &hints, &found);
  if (gai != 0) return std::string("cannot resolve ") + host + ": " + gai_strerror(gai);
  std::string reason = "no IPv4 address";
  int fd = -1;
  for (const addrinfo* ai = found; ai != nullptr && fd < 0; ai = ai->ai_next) fd = ConnectOne(ai, deadline, reason);
  freeaddrinfo(found);
  if (fd < 0) return reason;

  uint8_t request[1 + sizeof(uint64_t) + kCapsSize] = {0};
  request[0] = kCmdHello;
  const uint64_t request_size = kCapsSize;
  std::memcpy(request + 1, &request_size, sizeof(request_size));
  reason = SendAll(fd, request, sizeof(request), deadline);
  uint8_t response[sizeof(uint64_t) + kHelloResponseSize] = {0};
  if (reason.empty()) reason = RecvAll(fd, response, sizeof(response), deadline);
  close(fd);
  if (!reason.empty()) return reason;
  uint64_t response_size = 0;
  std::memcpy(&response_size, response, sizeof(response_size));
  const uint8_t major = response[8];
  const uint8_t minor = response[9];
  const uint8_t patch = response[10];
  if (response_size != kHelloResponseSize || major != RPC_PROTO_MAJOR_VERSION || minor > RPC_PROTO_MINOR_VERSION) {
    return "incompatible rpc-server (protocol " + std::to_string(major) + "." + std::to_string(minor) + "." +
           std::to_string(patch) + ", this build speaks " + std::to_string(RPC_PROTO_MAJOR_VERSION) + "." +
           std::to_string(RPC_PROTO_MINOR_VERSION) + ")";
  }
  return "";
#endif
}

std::vector<ggml_backend_dev_t> RpcDevices(const std::vector<std::string>& endpoints) {
  ggml_backend_reg_t reg = ggml_backend_reg_by_name("RPC");
  if (reg == nullptr) throw std::runtime_error("this build has no RPC backend (GGML_RPC off)");
  using AddServer = ggml_backend_reg_t (*)(const char* endpoint);
  auto add_server = reinterpret_cast<AddServer>(ggml_backend_reg_get_proc_address(reg, "ggml_backend_rpc_add_server"));
  if (add_server == nullptr) throw std::runtime_error("the RPC backend has no ggml_backend_rpc_add_server");
  std::vector<ggml_backend_dev_t> devices;
  for (const std::string& endpoint : endpoints) {
    // Registered with ggml per endpoint (cached there), NOT with ggml_backend_register: llama.cpp would then give the
    // workers to every model of the process; each model names its own in llama_model_params.devices.
    ggml_backend_reg_t server = add_server(endpoint.c_str());
    const size_t count = server != nullptr ? ggml_backend_reg_dev_count(server) : 0;
    if (count == 0) throw std::runtime_error("rpc server " + endpoint + " reports no device");
    for (size_t i = 0; i < count; ++i) devices.push_back(ggml_backend_reg_dev_get(server, i));
  }
  return devices;
}

void AcquireRpcEndpoints(const std::vector<std::string>& endpoints) {
  std::lock_guard<std::mutex> lock(endpoints_mutex);
  for (const std::string& endpoint : endpoints) ++endpoints_in_use[endpoint];
}

void ReleaseRpcEndpoints(const std::vector<std::string>& endpoints) {
  std::lock_guard<std::mutex> lock(endpoints_mutex);
  for (const std::string& endpoint : endpoints) {
    auto it = endpoints_in_use.find(endpoint);
    if (it != endpoints_in_use.end() && --it->second <= 0) endpoints_in_use.erase(it);
  }
}

bool RpcEndpointInUse(const std::string& endpoint) {
  std::lock_guard<std::mutex> lock(endpoints_mutex);
  return endpoints_in_use.count(endpoint) != 0;
}

}  // namespace llamad
