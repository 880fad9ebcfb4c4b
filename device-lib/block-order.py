#!/usr/bin/env python3
"""Puts the basic blocks of every function of an LLVM IR text module in
reverse post-order (each block after the blocks that dominate it).

SPIR-V requires that order; llvm-spirv 14 (and 15) keeps LLVM's, in which
the optimizer may leave a loop's exit block ahead of the loop (spirv-val:
"Block ... appears in the binary before its dominator"). Which functions
it hits changes with unrelated edits, so the device library's build puts
every function in order before translating (device-lib/build.sh).

    block-order.py IN.ll OUT.ll
"""
import re
import sys

LABEL = re.compile(r'^([-\w.$]+|"[^"]+"):')
TARGET = re.compile(r'label %([-\w.$]+|"[^"]+")')
NUMBERED = re.compile(r'^\s+%\d+ = ')


def order(body):
    """body: the lines between a function's braces. Returns them with the
    blocks in reverse post-order from the entry block."""
    names, blocks = [], {}
    current, lines = None, []
    for line in body:
        m = LABEL.match(line)
        if m:
            if current is not None or lines:
                names.append(current)
                blocks[current] = lines
            current, lines = m.group(1), [line]
        else:
            lines.append(line)
    names.append(current)
    blocks[current] = lines
    if any(n is not None and n.isdigit() for n in names) or any(NUMBERED.match(l) for l in body):
        # Numbered values must stay in order in the text: left as they are
        # (build.sh names every value first; `instnamer` skips optnone
        # functions, whose unoptimized order is the source's).
        return body
    succs = {}
    for n in names:
        text = "\n".join(l for l in blocks[n] if not l.lstrip().startswith(";"))
        succs[n] = [t.strip('"') if t.startswith('"') else t for t in TARGET.findall(text)]
    by_name = {(n.strip('"') if n else n): n for n in names}
    seen, post = set(), []
    stack = [(names[0], iter(succs[names[0]]))]
    seen.add(names[0])
    while stack:
        node, it = stack[-1]
        for s in it:
            s = by_name.get(s)
            if s is not None and s not in seen:
                seen.add(s)
                stack.append((s, iter(succs[s])))
                break
        else:
            post.append(node)
            stack.pop()
    rpo = post[::-1] + [n for n in names if n not in seen]
    assert rpo[0] == names[0]
    out = []
    for n in rpo:
        out.extend(blocks[n])
    return out


def main():
    src, dst = sys.argv[1], sys.argv[2]
    with open(src) as f:
        lines = f.read().split("\n")
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        if line.startswith("define ") and line.rstrip().endswith("{"):
            j = i
            while lines[j] != "}":
                j += 1
            out.extend(order(lines[i:j]))
            i = j
    with open(dst, "w") as f:
        f.write("\n".join(out))


if __name__ == "__main__":
    main()
