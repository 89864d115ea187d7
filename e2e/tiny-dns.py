#!/usr/bin/env python3
"""tiny-dns.py ADDR PORT NAME=IPV4...: a minimal authoritative DNS server over UDP
for tests (python3 stdlib only). Answers A queries for the given names, NODATA
for their other types, NXDOMAIN for every other name; prints each query it
received ("A vault.vault.svc.cluster.local"), so a test sees what the client
asked. Used by e2e/image-dns.sh inside a network namespace of its own.
"""

import socket
import struct
import sys


def parse_name(msg, off):
    labels = []
    while True:
        n = msg[off]
        if n == 0:
            return ".".join(labels).lower(), off + 1
        if n & 0xC0:  # compression pointers never appear in a question
            raise ValueError("compressed name in question")
        labels.append(msg[off + 1 : off + 1 + n].decode("ascii", "replace"))
        off += 1 + n


def answer(query, records):
    qid, flags, qdcount = struct.unpack("!HHH", query[:6])
    if qdcount != 1:
        raise ValueError("expected one question")
    name, end = parse_name(query, 12)
    qtype, qclass = struct.unpack("!HH", query[end : end + 4])
    question = query[12 : end + 4]
    rd = flags & 0x0100
    if name not in records:
        rcode, answers = 3, []  # NXDOMAIN
    elif qtype == 1 and qclass == 1:
        rcode, answers = 0, [records[name]]
    else:
        rcode, answers = 0, []  # NODATA: the name exists, not with this type
    header = struct.pack("!HHHHHH", qid, 0x8400 | rd | rcode, 1, len(answers), 0, 0)
    body = b"".join(
        struct.pack("!HHHIH", 0xC00C, 1, 1, 30, 4) + socket.inet_aton(ip) for ip in answers
    )
    return name, qtype, header + question + body


def main():
    addr, port = sys.argv[1], int(sys.argv[2])
    records = {}
    for spec in sys.argv[3:]:
        name, _, ip = spec.partition("=")
        records[name.lower().rstrip(".")] = ip
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((addr, port))
    print(f"tiny-dns: serving {len(records)} names on {addr}:{port}", flush=True)
    while True:
        query, client = sock.recvfrom(512)
        try:
            name, qtype, reply = answer(query, records)
        except (ValueError, IndexError, struct.error) as e:
            print(f"tiny-dns: bad query from {client}: {e}", flush=True)
            continue
        kind = {1: "A", 28: "AAAA"}.get(qtype, str(qtype))
        print(f"{kind} {name}", flush=True)
        sock.sendto(reply, client)


if __name__ == "__main__":
    main()
