"""The process group a worker joins for `pt2diff dist` (docs/distributed.md): one worker per rank, each compiling
and running its rank's graph, so that the graph's collectives run for real between the workers (gloo on the CPU,
NCCL on GPUs). Asked by `load`'s `process_group` field (docs/worker-protocol.md)."""
import datetime

from .protocol import Failure


def join(spec, device=None):
    """Initializes torch.distributed from `spec` ({backend, init_method, rank, world_size, timeout, groups}) unless
    this process already joined that group, then makes each group of `groups` in order and checks that it gets the
    name the graph's collectives use. NCCL: `device` ("cuda:1") becomes this process's current device first."""
    import torch.distributed as dist
    from torch.distributed import distributed_c10d as c10d

    if dist.is_initialized():
        if dist.get_rank() != spec["rank"] or dist.get_world_size() != spec["world_size"]:
            raise Failure("load_failed", f"this worker is rank {dist.get_rank()} of {dist.get_world_size()}, asked to be "
                                         f"rank {spec['rank']} of {spec['world_size']}")
        return
    try:
        if spec.get("backend") == "nccl" and device and str(device).startswith("cuda"):
            import torch
            torch.cuda.set_device(torch.device(device))
        dist.init_process_group(spec.get("backend", "gloo"), init_method=spec["init_method"], rank=int(spec["rank"]),
                                world_size=int(spec["world_size"]),
                                timeout=datetime.timedelta(seconds=float(spec.get("timeout", 300))))
        for group in spec.get("groups", []):
            pg = dist.new_group(ranks=list(group["ranks"]))
            name = c10d._world.pg_names.get(pg) if pg is not None else group["name"]  # None: this rank is not in it
            if name is not None and str(name) != str(group["name"]):
                raise Failure("load_failed", f"the group of ranks {group['ranks']} is named '{name}' here and "
                                             f"'{group['name']}' in the captured graphs: the groups were made in another order")
    except Failure:
        raise
    except Exception as e:  # noqa: BLE001
        raise Failure("load_failed", f"cannot join the process group as rank {spec.get('rank')} of "
                                     f"{spec.get('world_size')} ({spec.get('backend')}, {spec.get('init_method')}): {e}")
