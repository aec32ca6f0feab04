# The numpy reference of native/tests/scorers-selftest.cc: the published scorer formulas written out plainly, on the
# selftest's fixed inputs; it prints the numbers pasted there. python3 native/tests/scorers-reference.py
import numpy as np
np.set_printoptions(precision=9)
Hk,H,D,Dv,w,L,E=2,4,4,4,2,10,3
G=H//Hk; n=L-w
K=np.array([[[np.sin(1+g*7+j*3+d*1.3)*1.5 for d in range(D)] for j in range(L)] for g in range(Hk)])
V=np.array([[[np.cos(2+g*5+j*1.7+d*0.9) for d in range(Dv)] for j in range(L)] for g in range(Hk)])
qw=np.array([[[np.sin(0.5+i*2.1+h*1.1+d*0.7)*2 for d in range(D)] for h in range(H)] for i in range(w)])
Wo=np.array([[np.sin(0.3+r*1.9+c*0.37) for c in range(H*Dv)] for r in range(E)])
Q=np.array([[[np.cos(0.2+t*0.61+h*1.3+d*0.45)*1.5 for d in range(D)] for h in range(H)] for t in range(10)])
inv_freq=[1.0,0.01]; next_pos=10; b=2
def probs(g,h,i):
    logits=K[g]@qw[i,h]/np.sqrt(D)
    vis=L-w+i+1
    p=np.zeros(L); e=np.exp(logits[:vis]-logits[:vis].max()); p[:vis]=e/e.sum(); return p
def snap():
    out=[]
    for g in range(Hk):
        a=np.mean([probs(g,g*G+hh,i) for hh in range(G) for i in range(w)],axis=0)
        out.append(np.array([a[max(0,j-1):min(n,j+2)].max() for j in range(n)]))
    return out
def vnorm(g):  # mean over group of ||W_o^(h) v||_2
    return np.array([np.mean([np.linalg.norm(Wo[:,h*Dv:(h+1)*Dv]@V[g,j]) for h in range(g*G,(g+1)*G)]) for j in range(L)])
s=snap()
print("snapkv", "{" + ", ".join("{" + ", ".join("%.9g" % v for v in x) + "}" for x in s) + "}")
crit=[(s[g]+1e-4)*vnorm(g)[:n] for g in range(Hk)]
print("critical", "{" + ", ".join("{" + ", ".join("%.9g" % v for v in x) + "}" for x in crit) + "}")
# defensive
sc=[];ave=[];wm=0
for g in range(Hk):
    m=np.zeros(n); mean=np.zeros(n)
    for hh in range(G):
        for i in range(w):
            p=probs(g,g*G+hh,i); pre=p[:n]; base=pre.sum(); wm+=p[n:].sum(); mean+=pre
            pad=np.concatenate([[0,0],pre,[0,0]]); P=np.array([pad[j:j+5].sum()/5 for j in range(n)])
            P=P/P.sum()*base; m=np.maximum(m,P)
    m=np.maximum(m,m.mean()); sc.append(m); ave.append(mean)
N=np.array([vnorm(g)[:n] for g in range(Hk)]); Nn=N/N.sum(axis=0)
sc=[sc[g]*Nn[g] for g in range(Hk)]
top=max(x.max() for x in sc)
wb=wm/(H*w); tau=0.9-wb
for g in range(Hk):
    a=ave[g]/ave[g].sum(); order=np.argsort(-a,kind='stable'); cs=np.cumsum(a[order])
    count=int(np.argmax(cs>=tau)); count=min(count,b)
    for k in range(count): sc[g][order[k]]=top
print("defensive", "{" + ", ".join("{" + ", ".join("%.9g" % v for v in x) + "}" for x in sc) + "}")
# expected
q=Q[4:]  # sinks 4 removed
R=np.eye(D)
for i,f in enumerate(inv_freq):
    ps=np.arange(next_pos,next_pos+512); c=np.cos(ps*f).mean(); sn=np.sin(ps*f).mean()
    a,bb=2*i,2*i+1; R[a,a]=c;R[a,bb]=-sn;R[bb,a]=sn;R[bb,bb]=c
ex=[]
for g in range(Hk):
    acc=np.zeros(L)
    for h in range(g*G,(g+1)*G):
        mu=q[:,h].mean(0); cov=(q[:,h]-mu).T@(q[:,h]-mu)/len(q)
        mu2=R@mu; cov2=R@cov@R.T
        lg=np.array([K[g,j]@mu2/np.sqrt(D)+K[g,j]@cov2@K[g,j]/(2*D) for j in range(L)])
        e=np.exp(lg-lg.max()); acc+=e/e.sum()/G
    ex.append((acc[:n]+1e-2)*np.linalg.norm(V[g],axis=1)[:n])
top=max(x.max() for x in ex)
for x in ex: x[:4]=top
print("expected", "{" + ", ".join("{" + ", ".join("%.9g" % v for v in x) + "}" for x in ex) + "}")
