import re, sys
# extract.py LOG PATTERN: the log lines of every connection with a command matching PATTERN
pat = re.compile(sys.argv[2]); cur = {}; 
for l in open(sys.argv[1], errors='replace'):
    m = re.match(r'^\[[^\]]+\]: <\w+> \[(\w+)\] ', l)
    if not m: continue
    cid = m.group(1)
    if 'Connecting to' in l: cur[cid] = [l, False]; continue
    if cid not in cur: continue
    cur[cid][0] += l
    if pat.search(l): cur[cid][1] = True
    if re.search(r'S: A\d+ OK LOGOUT', l, re.I):
        if cur[cid][1]: sys.stdout.write(cur[cid][0] + '\n')
        del cur[cid]
