#!/usr/bin/env python3
"""Steps spmd.compile must reject at compile time with the op (or dtype),
the user's source line and what to do instead: prints each error's message.

    python3 error_check.py CASE            # catches the error, prints it
    python3 error_check.py CASE uncaught   # leaves it to the exception hook
"""

import sys

import torch
import torch.nn as nn

import spmd


class Cumsum(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return torch.cumsum(self.fc(x), dim=1)  # LINE-cumsum


class Half(nn.Module):
    """16-bit floats compile inside the step (autocast); 8-bit ones do
    not."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x).to(torch.float8_e4m3fn).float()  # LINE-half


def library_model():
    """Only torch's own modules: the error names the user's call of the
    model (FX's stack traces alone start inside torch) and the module."""
    return nn.Sequential(nn.Linear(4, 4), nn.RReLU())


class Bf16Params(nn.Module):
    """Parameters stored in bfloat16: a clear error (keep float32 master
    parameters and use autocast)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4).bfloat16()

    def forward(self, x):
        return self.fc(x.bfloat16()).float()


class Sort(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return torch.sort(self.fc(x), dim=1).values  # LINE-sort


class BatchNorm(nn.Module):
    """BatchNorm's buffer updates compile; a parameter changed in place in
    the forward does not."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.bn = nn.BatchNorm1d(4)

    def forward(self, x):
        with torch.no_grad():
            self.fc.bias.mul_(0.5)  # LINE-inplace
        return self.bn(self.fc(x))


class Det(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return torch.linalg.det(self.fc(x).reshape(-1, 2, 2))  # LINE-det


class Erfinv(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return torch.special.erfinv(torch.tanh(self.fc(x)))  # LINE-erfinv


class DataDependent(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        y = self.fc(x)
        return y if y.sum() > 0 else -y  # LINE-branch


class ClampErfinv(nn.Module):
    """Its backward has in-place ops, so the graph is functionalized (and
    retraced) before import: locations must survive that."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        y = torch.clamp(self.fc(x), -0.9, 0.9)
        return torch.special.erfinv(y)  # LINE-clamp-erfinv


class Dropout(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        # Dropout compiles (Philox); drawing integers does not.
        noise = torch.randint_like(x, 0, 3)  # LINE-dropout
        return self.fc(x) + noise


MODELS = {"dropout": Dropout, "clamp_erfinv": ClampErfinv, "branch": DataDependent, "det": Det, "erfinv": Erfinv, "cumsum": Cumsum, "half": Half, "bf16_params": Bf16Params, "library": library_model,
          "in_step": lambda: nn.Linear(4, 4), "sort": Sort, "batchnorm": BatchNorm}


def main():
    case = sys.argv[1]
    model = MODELS[case]()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    @spmd.compile()
    def train_step(model, opt, x):
        out = model(x)  # LINE-step
        if case == "in_step":  # an unsupported op in the step itself
            out = out.to(torch.float8_e4m3fn).float()  # LINE-in-step
        loss = out.pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    if sys.argv[2:] == ["uncaught"]:
        train_step(model, opt, torch.randn(4, 4))  # LINE-call
    try:
        train_step(model, opt, torch.randn(4, 4))
    except spmd.UnsupportedError as err:
        print(f"UnsupportedError: {err}")
        return 0
    print("no error")
    return 1


if __name__ == "__main__":
    sys.exit(main())
