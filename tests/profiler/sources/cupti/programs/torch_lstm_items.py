"""A cuDNN LSTM evaluated step by step with a scalar read per step: thousands of launches and memsets between
the `.item()` calls, so that launch-site sampling opens and closes its windows many times during the loop."""

import torch

STEPS = 400
device = torch.device("cuda")
rnn = torch.nn.LSTM(64, 64, 2, dropout=0.2).to(device)
decoder = torch.nn.Linear(64, 100).to(device)
x = torch.randn(35, 8, 64, device=device)
targets = torch.randint(0, 100, (280,), device=device)
loss_fn = torch.nn.CrossEntropyLoss()
rnn.eval()
total = 0.0
with torch.no_grad():
    hidden = None
    for _ in range(STEPS):
        out, hidden = rnn(x, hidden)  # site: forward
        total += loss_fn(decoder(out).view(-1, 100), targets).item()  # site: item
torch.cuda.synchronize()
print(total)
