#!/usr/bin/env python3
"""A tiny UDP DNS responder for the probe: answers A, MX and TXT from a JSON
zone file re-read on every query, {"name.": {"A": ["1.2.3.4"], "MX": [[10,
"mx.name."]], "TXT": ["text"]}}; anything else is an empty NOERROR answer
(NXDOMAIN when the name is absent). Usage: dnsstub.py ADDR PORT ZONE.json"""
import json, socket, struct, sys

def qname(buf, off):
    labels = []
    while True:
        n = buf[off]; off += 1
        if n == 0:
            break
        labels.append(buf[off:off + n].decode("ascii", "replace")); off += n
    return ".".join(labels).lower() + ".", off

def enc_name(name):
    out = b""
    for l in name.rstrip(".").split("."):
        if l:
            out += bytes([len(l)]) + l.encode()
    return out + b"\0"

def rr(qtype, data):
    return b"\xc0\x0c" + struct.pack(">HHIH", qtype, 1, 60, len(data)) + data

def answer(pkt, zone):
    tid, flags, qd = struct.unpack(">HHH", pkt[:6])
    name, off = qname(pkt, 12)
    qtype, qclass = struct.unpack(">HH", pkt[off:off + 4])
    question = pkt[12:off + 4]
    recs = zone.get(name)
    ans = []
    if recs:
        if qtype == 1:
            ans = [rr(1, socket.inet_aton(a)) for a in recs.get("A", [])]
        elif qtype == 15:
            ans = [rr(15, struct.pack(">H", p) + enc_name(h)) for p, h in recs.get("MX", [])]
        elif qtype == 16:
            for t in recs.get("TXT", []):
                b = t.encode()
                chunks = b"".join(bytes([len(b[i:i + 255])]) + b[i:i + 255] for i in range(0, max(len(b), 1), 255))
                ans.append(rr(16, chunks))
    rcode = 0 if recs is not None else 3
    hdr = struct.pack(">HHHHHH", tid, 0x8180 | rcode | (flags & 0x0100), 1, len(ans), 0, 0)
    return hdr + question + b"".join(ans)

def main():
    addr, port, zonefile = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((addr, port))
    while True:
        pkt, peer = s.recvfrom(4096)
        try:
            zone = {k.lower(): v for k, v in json.load(open(zonefile)).items()}
            s.sendto(answer(pkt, zone), peer)
        except Exception as e:  # a malformed query gets no answer
            print("dnsstub:", e, file=sys.stderr)

if __name__ == "__main__":
    main()
