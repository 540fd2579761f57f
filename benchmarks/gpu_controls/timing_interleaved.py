import torch,time,random,json,os,gc,torch.nn.functional as F
from tokvec.bench import gpu as G
from tokvec import fused as fm
from tokvec.arrays import sinusoidal_table_numpy as sin
dv=torch.device('cuda');O=os.environ.get('OUT','.');R={}
def sv(k,v):
 R[k]=v;print(k,v,flush=True);json.dump(R,open(O+'/r2.json','w'),indent=1)
fl=torch.ones(64*2**20,device=dv);D=4096
for B,T in((64,2048),(64,1)):
 w=torch.randn(32000,D,device=dv).bfloat16();i=torch.randint(0,32000,(B,T),device=dv);pe=torch.from_numpy(sin(T,D)).float().to(dv);p16=pe.bfloat16()
 fn={'fused':lambda:fm.fused_embedding(i,w,pe,64.0,check=False),'eager':lambda:F.embedding(i,w)*64.0+p16}
 M={'hold':{},'short':{'hold':200000},'none':{'hold':0},'zero_none':{'hold':0,'mode':'zero'}}
 t={(f,m):[] for f in fn for m in M};rng=random.Random(0);ks=list(t)
 for f in fn:[fn[f]() for _ in range(3)]
 gc.disable()
 for r in range(40):
  rng.shuffle(ks)
  for f,m in ks:t[(f,m)].append(G._time_once(fn[f],dv,fl,**M[m]))
 gc.enable();sv(f'{B}x{T}',{f'{f} {m}':[round(x*1e3,1) for x in G.quantiles(v)] for (f,m),v in t.items()})
from tokvec.layers import TransformerEmbedding as TE
L=TE(32000,D,4096,dropout=0.0,device=dv,dtype=torch.bfloat16).eval()
w,p,s=L.token.weight.detach(),L.pe,L.scale
ids=torch.randint(0,32000,(64,1),device=dv);off=torch.randint(0,4096,(64,),device=dv)
c=torch.compile(lambda ids,off:F.embedding(ids,w)*s+p[off][:,None],mode='reduce-overhead',dynamic=False)
def st():torch.compiler.cudagraph_mark_step_begin();return c(ids,off)
from torch.profiler import profile
with torch.inference_mode():
 for _ in range(10):st()
 torch.cuda.synchronize();t0=time.perf_counter()
 for _ in range(200):st()
 torch.cuda.synchronize();sv('wall_us',round((time.perf_counter()-t0)/200*1e6,1))
 with profile() as pr:
  for _ in range(20):st()
  torch.cuda.synchronize()
print(pr.key_averages().table(sort_by='self_cpu_time_total',row_limit=14,max_name_column_width=45))
print(pr.key_averages().table(sort_by='self_device_time_total',row_limit=6,max_name_column_width=45))
