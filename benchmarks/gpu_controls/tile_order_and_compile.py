import torch,time,random,json,os,statistics as S,torch.nn.functional as F
from tokvec.bench import gpu as G
from tokvec.bench.gpu_validate import _launcher as LA
from tokvec.arrays import sinusoidal_table_numpy as sin
dv=torch.device('cuda');O=os.environ.get('OUT','.');R={}
def sv(k,v):
 R[k]=v;print(k,v,flush=True);json.dump(R,open(O+'/r.json','w'),indent=1)
fl=torch.ones(64*2**20,device=dv)
def tm(fns,n=15):
 t,_=G._interleaved(fns,lambda f:G._time_once(f,dv,fl),n,3,random.Random(0));return{k:round(S.median(v)*1e3,1)for k,v in t.items()}
B,T,D=64,2048,4096;g=torch.Generator(device=dv).manual_seed(0);bf=torch.bfloat16
pe=torch.from_numpy(sin(T,D)).float().to(dv)
W={V:torch.randn(V,D,device=dv,generator=g).to(bf) for V in(32000,131072)}
I={'uni':(32000,torch.randint(0,32000,(B,T),device=dv,generator=g)),'perm':(131072,torch.randperm(131072,device=dv,generator=g).view(B,T))}
src=torch.empty(B,T,D,device=dv,dtype=bf);dst=torch.empty_like(src)
f={'copy':lambda:dst.copy_(src)}
for k,(V,i) in I.items():
 w=W[V]
 for bt,bd,wp in((4,128,4),(1,4096,8),(4,512,8)):f[f'{bt}x{bd}w{wp} {k}']=LA(i,w,pe,block_t=bt,block_d=bd,warps=wp)
 f['gather '+k]=lambda i=i,w=w:F.embedding(i,w)
sv('reuse_us',tm(f))
i,w=I['uni'][1],W[32000]
c=torch.compile(lambda:(F.embedding(i,w).float()*64.0+pe).to(bf),dynamic=False);c()
from torch.profiler import profile
with profile() as pr:c();torch.cuda.synchronize()
sv('compiled_kernels',sorted({e.name[:60] for e in pr.events() if e.device_type.name=='CUDA'}))
del f,src,dst,W,I;torch.cuda.empty_cache()
from tokvec.layers import TransformerEmbedding as TE
L=TE(32000,D,4096,dropout=0.0,device=dv,dtype=bf).eval()
w,p,s=L.token.weight.detach(),L.pe,L.scale
ids=torch.randint(0,32000,(64,1),device=dv);off=torch.randint(0,4096,(64,),device=dv)
def mk(w,p):return lambda ids,off:F.embedding(ids,w)*s+p[off][:,None]
w2,p2=w.clone(),p.clone();torch._dynamo.mark_static_address(w2);torch._dynamo.mark_static_address(p2)
def wall(fn,n=200):
 torch.cuda.synchronize();t=time.perf_counter()
 for _ in range(n):fn()
 torch.cuda.synchronize();return round((time.perf_counter()-t)/n*1e6,1)
res={}
with torch.inference_mode():
 for name,e in(('closure',mk(w,p)),('static',mk(w2,p2))):
  t0=time.time();c=torch.compile(e,mode='reduce-overhead',dynamic=False)
  def st(c=c):torch.compiler.cudagraph_mark_step_begin();return c(ids,off)
  for _ in range(5):st()
  res[name]=[wall(st) for _ in range(3)];res[name+'_s']=round(time.time()-t0,1);sv('graphs_us',res)
 res['eager']=[wall(lambda:mk(w,p)(ids,off)) for _ in range(3)];sv('graphs_us',res)
