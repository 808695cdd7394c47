#!/usr/bin/env python3
# ncu's per-instruction stall samples (--page source --print-source sass --csv): the instructions with
# >= 0.4% of the samples, then the samples between barriers with the instruction mix. Usage: ncu_regions.py SASS.csv
import csv,sys
rows=list(csv.reader(open(sys.argv[1])))
hdr=rows[1]; data=rows[2:]
ix={h:i for i,h in enumerate(hdr)}
stalls=[h for h in hdr if h.startswith('stall_') and 'Not Issued' not in h]
tot=sum(int(r[ix['Warp Stall Sampling (All Samples)']]) for r in data)
print("total samples",tot, "instrs", len(data))
# blocks
cum=0
blk=[]
for n,r in enumerate(data):
    s=int(r[ix['Warp Stall Sampling (All Samples)']])
    st={h:int(r[ix[h]]) for h in stalls}
    top=max(st,key=st.get) if s else ''
    blk.append((n,r[ix['Source']].strip(),s,top,int(r[ix['Instructions Executed']] or 0)))
# print instructions with >=0.4% of samples
for n,src,s,top,ex in blk:
    if s>=tot*0.004: print("%5d %6.2f%% %-18s ex=%-8d %s"%(n,100*s/tot,top[6:],ex,src[:70]))
print()
import re
cur=[];acc=0;start=0
def flush(a,b):
    seg=blk[a:b]
    s=sum(x[2] for x in seg)
    if s==0: return
    ops={}
    for x in seg:
        op=x[1].split()[0] if not x[1].startswith('@') else x[1].split()[1]
        op=op.split('.')[0]
        if op in('BAR','DMMA','LDG','LDS','STG','STS','SHFL','MUFU','F2F','LDGSTS','BRA','STL','LDL','WARPSYNC','UCGABAR_WAIT','ERRBAR'):
            ops[op]=ops.get(op,0)+1
    st={}
    for x in seg:
        if x[3]: st[x[3]]=st.get(x[3],0)+x[2]
    tops=sorted(st.items(),key=lambda kv:-kv[1])[:3]
    print("%5d-%5d %6.2f%%  %s | %s"%(a,b,100*s/tot," ".join("%s%d"%(k,v) for k,v in ops.items())," ".join("%s:%.1f"%(k[6:],100*v/tot) for k,v in tops)))
bars=[i for i,x in enumerate(blk) if 'BAR.SYNC' in x[1] or 'BAR.RED' in x[1] or 'UCGABAR_WAIT' in x[1]]
prev=0
for b in bars+[len(blk)]:
    flush(prev,b+1); prev=b+1
