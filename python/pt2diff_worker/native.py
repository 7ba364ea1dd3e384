"""What must happen in the worker's process before torch is imported (no torch here): the worker's main() and
the worker server's imports (server.py) both run it."""


def bind_libstdcxx_first():
    """Loads libstdc++ into the process's global symbol scope, ahead of torch's libraries; returns whether
    it could. Must run before torch is imported.

    torch 2.11's CUDA wheel ships a libtorch.so that exports 64 `std::filesystem` functions without
    depending on libstdc++; one of them (`remove_all`) calls an address that is never resolved. Whatever
    binds to libtorch.so's copy crashes: `torch._inductor.aoti_load_package` segfaults on every package
    (measured on an H200, 2.11.0+cu130: SIGSEGV in _load_aoti; with this, the same package loads and
    runs). The engine's binary gets the same fix from its link order (docs/building.md)."""
    import ctypes
    try:
        ctypes.CDLL("libstdc++.so.6", mode=ctypes.RTLD_GLOBAL)
    except OSError:
        return False
    return True
