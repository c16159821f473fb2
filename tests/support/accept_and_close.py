"""A stand-in for a broken server (tests/buildenv/test_distcc_hosts.py):
listens on ADDRESS PORT, accepts each connection and closes it at once,
printing one line per connection.  Run by support/host_servers.accept_and_close
in a test host; killed with it.

    python accept_and_close.py ADDRESS PORT
"""

import socket
import sys

server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind((sys.argv[1], int(sys.argv[2])))
server.listen(16)
while True:
    conn, peer = server.accept()
    conn.close()
    print("closed", *peer, flush=True)
