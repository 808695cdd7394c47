import csv,gzip,sys
f=sys.argv[1]
r=list(csv.reader(gzip.open(f,'rt'))); hdr=r[1]; rows=r[2:]
ix={h:i for i,h in enumerate(hdr)}
S='Warp Stall Sampling (All Samples)'
# print contiguous blocks of instructions executed 61440 times (the fold loop) and sums
tot=0; blocks=[]; cur=None
for row in rows:
    n=int(row[ix[S]] or 0); ex=int(row[ix['Instructions Executed']] or 0); tot+=n
    key = ex
    if cur and cur[0]==key: cur[2]+=n; cur[3]+=1; cur[4]+=ex
    else:
        cur=[key,row[0][-5:],n,1,ex]; blocks.append(cur)
print('total samples',tot)
agg={}
for b in blocks:
    agg.setdefault(b[0],[0,0,0]); agg[b[0]][0]+=b[2]; agg[b[0]][1]+=b[3]; agg[b[0]][2]+=b[4]
for k,v in sorted(agg.items(), key=lambda x:-x[1][0])[:12]:
    print(f"exec count {k:>7}: samples {v[0]:>5} ({v[0]*100//tot}%), instructions {v[1]:>5}, warp-instr executed {v[2]}")
