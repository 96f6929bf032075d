"""Any engine on a Ray cluster (`--executor ray`): the backend the driver holds, and what runs on the cluster.

| module | concern |
|---|---|
| `backend` | `RayBackend`: the driver's side, sending the cache's misses as a Ray Data dataset |
| `workers` | the actor pool of `hf:` and API engines (`ActorPlan`) |
| `vllm_processor` | `vllm:` engines through `ray.data.llm`'s processor (`VLLMPlan`) |
| `rows` | requests and outcomes as Ray Data rows |
| `noise` | Ray's own notices that a successful run should not print |
"""
