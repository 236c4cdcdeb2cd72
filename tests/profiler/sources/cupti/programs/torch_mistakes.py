"""Plain PyTorch with the classic transfer mistakes; the GPU tests know every copy it makes.

Each copying line ends with a `# site: NAME` marker the tests look up.
"""

import torch

STEPS = 20
N = 1 << 18  # 1 MiB of float32
BIG = 8 << 20  # 32 MiB of float32


def main() -> None:
    dev = torch.device("cuda")
    x = torch.arange(N, dtype=torch.float32)  # pageable, the same on every step
    w = torch.zeros(N, device=dev)
    total = 0.0
    for step in range(STEPS):
        xd = x.to(dev)  # site: to
        w.add_(xd, alpha=0.5)
        total += w[:4].sum().item()  # site: item
    big = torch.ones(BIG)
    for i in range(3):
        big[0] = i
        b = big.to(dev)  # site: pageable
    pinned = big.pin_memory()
    for i in range(3):
        b = pinned.to(dev, non_blocking=True)  # site: pinned
    torch.cuda.synchronize()  # site: sync
    out = w.cpu()  # site: result
    print(f"total {total:.1f}, out[1] {out[1].item():.1f}, b[1] {b[1].item():.1f}")


if __name__ == "__main__":
    main()
