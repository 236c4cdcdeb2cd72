"""A training loop fed by a DataLoader with pinned memory and two worker processes: PyTorch's pin-memory thread
makes CUDA calls (page-locked allocations, events) while the main thread launches, copies and syncs, and the
recorder switches the launch callbacks from the main thread's callbacks meanwhile."""

import torch
from torch.utils.data import DataLoader, TensorDataset

BATCHES = 375
device = torch.device("cuda")
data = TensorDataset(torch.randn(BATCHES * 64, 256), torch.randint(0, 10, (BATCHES * 64,)))
loader = DataLoader(data, batch_size=64, shuffle=True, pin_memory=True, num_workers=2)
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loss_fn = torch.nn.CrossEntropyLoss()
total = 0.0
for x, y in loader:
    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)  # site: upload
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    total += loss.item()  # site: item
print(total)
