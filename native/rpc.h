// llama.cpp's RPC backend (ggml-rpc) for models that offload layers to rpc-server workers: endpoint checks, the
// reachability probe run before a load, and the RPC devices of a list of workers. Pure C++ (no napi.h).
//
// ggml-rpc aborts the process (GGML_ABORT) when it cannot connect to a worker or the handshake fails, so a load
// first probes every worker itself (TCP connect + the protocol's HELLO, with a timeout) and fails cleanly instead.
// A connection that breaks later fails that model's decodes (vendor/patches/0001, engine.cpp LostRpcServer);
// docs/native.md "RPC" says what is still fatal.
#ifndef LLAMAD_NATIVE_RPC_H_
#define LLAMAD_NATIVE_RPC_H_

#include <string>
#include <vector>

#include "ggml-backend.h"

namespace llamad {

// Whether `endpoint` is "host:port" (a host name, IPv4 address or [IPv6] address; port 1..65535).
bool IsRpcEndpoint(const std::string& endpoint);

// Connects to `endpoint`, sends the RPC HELLO and checks the worker's protocol version, within `timeout_ms` for each
// step. Returns '' when the worker answers with a compatible version, else why not ("connection refused", "timed out
// waiting for the handshake (the worker may be serving another client)", "protocol 6.1.0, this build speaks 7.x").
std::string ProbeRpcServer(const std::string& endpoint, int timeout_ms);

// The ggml devices of each worker, in order (ggml_backend_rpc_add_server through the RPC registry, as llama-server
// does for --rpc). Connects to the workers: probe them first. Throws std::runtime_error when a worker reports no
// device.
std::vector<ggml_backend_dev_t> RpcDevices(const std::vector<std::string>& endpoints);

// Endpoints held by loaded models of this process. rpc-server serves one client connection at a time and ggml keeps
// one connection per endpoint for as long as a model uses it, so a probe of an endpoint in use would wait on the
// worker's accept queue: loads skip the probe for those.
void AcquireRpcEndpoints(const std::vector<std::string>& endpoints);
void ReleaseRpcEndpoints(const std::vector<std::string>& endpoints);
bool RpcEndpointInUse(const std::string& endpoint);

}  // namespace llamad

#endif  // LLAMAD_NATIVE_RPC_H_
