#!/usr/bin/env python3
# Per-CTA phase durations (median, us) of the per-head kernel's trace CSV (k128_trace.cuh), by fold kind
# (end column 4: a start fold). Usage: python3 phases.py TRACE.k128.csv ...
import csv,statistics as st,sys
for f in sys.argv[1:]:
    rows=list(csv.DictReader(open(f)))
    print(f)
    groups={}
    for r in rows:
        e=float(r['entry'])
        if e<0: continue
        g=lambda k: float(r[k])
        stored=max(g('stored%d'%w) for w in range(16))
        d=dict(slot=g('slot')-e, ring=g('ring')-g('slot'))
        k=int(r['end'])
        if k&4:
            d['fold']=g('fold')-g('ring'); d['foldst']=g('foldst')-g('fold'); d['gates']=g('gates')-g('foldst')
        else:
            d['gates']=g('gates')-g('ring')
        d['weights']=g('rows')-g('gates'); d['rows']=stored-g('rows'); d['total']=stored-e
        groups.setdefault(k,[]).append(d)
    tot=sum(len(v) for v in groups.values())
    for k,v in sorted(groups.items()):
        print(" fold=%d n=%d (%.1f%%)"%(k,len(v),100*len(v)/tot), "  ".join("%s %.2f"%(p,st.median([x[p] for x in v])) for p in v[0]))
