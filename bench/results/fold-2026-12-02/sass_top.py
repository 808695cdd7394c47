import csv,gzip,sys
def load(f):
    r=list(csv.reader(gzip.open(f,'rt')))
    hdr=r[1]; rows=r[2:]
    return hdr,rows
for f in sys.argv[1:]:
    hdr,rows=load(f)
    ix={h:i for i,h in enumerate(hdr)}
    stalls=[h for h in hdr if h.startswith('stall_') and 'Not Issued' not in h]
    tot={s:0 for s in stalls}; samples=0; inst=0
    for row in rows:
        try: n=int(row[ix['Warp Stall Sampling (All Samples)']])
        except: continue
        samples+=n; inst+=int(row[ix['Instructions Executed']] or 0)
        for s in stalls: tot[s]+=int(row[ix[s]] or 0)
    print(f, 'samples',samples,'inst',inst)
    print('  ', ' '.join(f"{s[6:]}={v*100//max(samples,1)}%" for s,v in sorted(tot.items(), key=lambda x:-x[1]) if v*100>=samples))
    # top instructions
    top=sorted(rows, key=lambda r: -int(r[ix['Warp Stall Sampling (All Samples)']] or 0) if r[ix['Warp Stall Sampling (All Samples)']].isdigit() else 0)[:25]
    for r in top:
        d={s[6:]:int(r[ix[s]] or 0) for s in stalls}
        main=sorted(d.items(), key=lambda x:-x[1])[:2]
        print(f"   {r[0][-5:]} {r[1].strip()[:60]:60s} {r[ix['Warp Stall Sampling (All Samples)']]:>6} ex={r[ix['Instructions Executed']]:>7} {main}")
