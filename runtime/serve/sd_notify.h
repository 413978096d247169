// systemd's readiness protocol (sd_notify(3)) without libsystemd: a datagram to $NOTIFY_SOCKET.
// `bpfql serve` sends READY=1 once its probes are attached and the listener answers, so a unit
// with Type=notify is "active" exactly when scrapes get data; STOPPING=1 when it ends.
#pragma once

#include <string_view>

namespace bpfql {

// Sends `state` ("READY=1\nSTATUS=...") when $NOTIFY_SOCKET is set; false if it is unset or the
// send failed. Never throws, never blocks.
bool sd_notify_state(std::string_view state);

}  // namespace bpfql
