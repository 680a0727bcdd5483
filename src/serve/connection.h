// Whether the client of a request still listens. cpp-httplib 0.11 hands a handler no socket and no
// "connection closed" query, so a non-streaming request finds its own connection among the process's
// sockets by its two endpoints (unique while the handler runs, which keeps the socket open).
#pragma once
#include <string>

namespace jf {

// The socket whose peer is remote_addr:remote_port (numeric, as cpp-httplib writes them) and whose local
// port is local_port; -1 when there is none (not a TCP connection, or the endpoints are unknown).
int find_connection_socket(const std::string& remote_addr, int remote_port, int local_port);

// True when the peer has closed (or reset) the connection: nothing it sends can be answered any more. A
// peer that only shut down its sending side also counts, as in nginx and later cpp-httplib releases.
bool peer_has_closed(int socket);

}  // namespace jf
