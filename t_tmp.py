import torch, warnings, sys
warnings.simplefilter("ignore")
from tests.eager import opdb_harness as H
res = H.resolved()
want = sys.argv[1]; dts = [getattr(torch, d) for d in sys.argv[2].split(",")]
for op in H.OP_DB:
    eid = H.entry_id(op)
    if eid != want: continue
    for dt in dts:
      for s in H.samples(op, dt, None):
        d = H.check_sample(op, res[eid], s, "eager")
        if d:
            def desc(v):
                return (tuple(v.shape), str(v.dtype).replace("torch.", "")) if isinstance(v, torch.Tensor) else (type(v)(desc(x) for x in v) if isinstance(v, (list, tuple)) else v)
            print(eid, dt, desc(s.input), desc(tuple(s.args)), {k: desc(v) for k, v in s.kwargs.items()})
            print("  ", d[0][:300])
