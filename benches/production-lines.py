#!/usr/bin/env python3
"""Production lines of the crate, per top-level folder of src/ (a top-level
file counts as its own folder): .rs lines, blank and comment lines included,
minus the items marked #[cfg(test)] and the files of modules declared only
under #[cfg(test)]. Braces are counted as text, so a test item whose strings
hold unbalanced braces may be measured a little off.

Usage: python3 benches/production-lines.py src [-f]   (-f: per file too)"""
import os, re, sys, collections
root = sys.argv[1]
files = {}
for d, _, fs in os.walk(root):
    for f in fs:
        if f.endswith('.rs'):
            files[os.path.join(d, f)] = open(os.path.join(d, f), encoding='utf-8', errors='replace').read().split('\n')

def strip_test_items(lines):
    out, i, test_mods = [], 0, []
    while i < len(lines):
        if lines[i].strip().startswith('#[cfg(test)]'):
            # skip attribute(s) and the next item
            j = i + 1
            while j < len(lines) and lines[j].strip().startswith('#['):
                j += 1
            item = lines[j] if j < len(lines) else ''
            m = re.match(r'\s*(pub(\([^)]*\))?\s+)?mod\s+(\w+)\s*;', item)
            if m:
                test_mods.append(m.group(3)); i = j + 1; continue
            depth, k, opened = 0, j, False
            while k < len(lines):
                depth += lines[k].count('{') - lines[k].count('}')
                if '{' in lines[k]: opened = True
                if (opened and depth <= 0) or (not opened and lines[k].rstrip().endswith(';')):
                    break
                k += 1
            i = k + 1; continue
        out.append(lines[i]); i += 1
    return out, test_mods

test_files = set()
counts = {}
for p, lines in files.items():
    kept, mods = strip_test_items(lines)
    counts[p] = len(kept) - (1 if lines and lines[-1] == '' else 0)
    base = os.path.dirname(p)
    stem = os.path.splitext(os.path.basename(p))[0]
    for m in mods:
        for cand in (os.path.join(base, m + '.rs'), os.path.join(base, m, 'mod.rs'),
                     os.path.join(base, stem, m + '.rs')):
            test_files.add(cand)
per = collections.Counter()
for p, n in counts.items():
    if p in test_files: continue
    rel = os.path.relpath(p, root)
    folder = rel.split(os.sep)[0] if os.sep in rel else rel
    per[folder] += n
if '-f' in sys.argv:
    for p, n in sorted(counts.items()):
        if p not in test_files: print(f"{os.path.relpath(p, root):32} {n}")
for k in sorted(per): print(f"{k:20} {per[k]}")
print(f"{'total':20} {sum(per.values())}")
