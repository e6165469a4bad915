"""The programs of seeds 000 and 002 (``../shared/seeds``), and the only edits made to run them.

Seed 002 is Markdown: its first two ``python`` blocks are the program and are read from the
file. Seed 000 holds the same program with its indentation lost in extraction; ``SEED_000``
reproduces it verbatim with the indentation restored, and ``seed_000_text_matches`` checks it
against the file, ignoring whitespace only.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Optional

SEEDS = Path(os.environ.get("SYMGRAPH_SEEDS",
                            Path(__file__).resolve().parents[2].parent / "shared" / "seeds"))

# Seed 000, verbatim (Chinese comments included), indentation restored.
SEED_000 = '''import mxnet as mx
from mxnet import gluon, nd
from mxnet.gluon import nn
# 定义一个简单的卷积神经网络
class SimpleCNN(gluon.Block):
    def __init__(self):
        super(SimpleCNN, self).__init__()
        with self.name_scope():
            self.conv1 = nn.Conv2D(32, kernel_size=3, strides=1, padding=1)
            self.conv2 = nn.Conv2D(64, kernel_size=3, strides=1, padding=1)
            self.fc1 = nn.Dense(128)
            self.fc2 = nn.Dense(10)
    def forward(self, x):
        x = nd.relu(self.conv1(x))
        x = nd.Pooling(x, pool_type='max', kernel=(2, 2), stride=(2, 2))
        x = nd.relu(self.conv2(x))
        x = nd.Pooling(x, pool_type='max', kernel=(2, 2), stride=(2, 2))
        x = x.reshape((0, -1)) # 展平
        x = nd.relu(self.fc1(x))
        x = self.fc2(x)
        return x
# 使用 GPU
ctx = mx.gpu()
# 初始化模型
net = SimpleCNN()
net.initialize(ctx=ctx)
''', '''from mxnet import gluon, autograd
# 加载 MNIST 数据集
mnist_train = gluon.data.vision.datasets.MNIST(train=True)
transform = gluon.data.vision.transforms.ToTensor()
train_loader = gluon.data.DataLoader(mnist_train.transform_first(transform), batch_size=64, shuffle=True)
# 定义损失函数和优化器
loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.01})
# 开始训练
for epoch in range(1):
    for data, label in train_loader:
        data = data.as_in_context(ctx)
        label = label.as_in_context(ctx)
        with autograd.record():
            output = net(data) # 前向传播
            loss = loss_fn(output, label) # 计算损失
        loss.backward() # 反向传播
        trainer.step(batch_size=64) # 更新参数
'''


def _hybrid(model: str) -> str:
    """Seed 000's model part written as a HybridBlock (``hybrid_forward`` with ``F``), then
    hybridized: the edits a user makes, each checked to apply."""
    for old, new in (("(gluon.Block)", "(gluon.HybridBlock)"),
                     ("def forward(self, x):", "def hybrid_forward(self, F, x):"),
                     ("nd.relu(", "F.relu("), ("nd.Pooling(", "F.Pooling("),
                     ("net.initialize(ctx=ctx)\n", "net.initialize(ctx=ctx)\nnet.hybridize()\n")):
        assert old in model, f"seed 000 no longer contains {old!r}"
        model = model.replace(old, new)
    return model


# The same network as a HybridBlock, hybridized.
HYBRID_MODEL = _hybrid(SEED_000[0])


def seed_file(number: str) -> Path:
    """The file of seed ``number`` ("002") in ``SEEDS``; skips the calling test, naming
    ``SYMGRAPH_SEEDS``, when a checkout has no seeds beside it."""
    found = sorted(SEEDS.glob(f"{number}_*.txt"))
    if not found:
        import pytest  # only a test reaches this; benchmarks import the module without pytest
        pytest.skip(f"seed {number} not found in {SEEDS}: set SYMGRAPH_SEEDS to the seeds folder")
    return found[0]


def seed_002() -> tuple[str, str]:
    """The model part and the training part of seed 002 (its first two python blocks)."""
    blocks = re.findall(r"```python\n(.*?)```", seed_file("002").read_text(encoding="utf-8"),
                        re.S)
    return blocks[0], blocks[1]


def seed_000_text_matches() -> bool:
    """``SEED_000`` equals the code lines of the seed 000 file, whitespace aside."""
    text = seed_file("000").read_text(encoding="utf-8")
    squash = lambda s: re.sub(r"\s+", "", s)  # noqa: E731
    parts = []
    for first, last in (("import mxnet as mx", "net.initialize(ctx=ctx)"),
                        ("from mxnet import gluon, autograd", "trainer.step(batch_size=64)")):
        start = text.index(first)
        parts.append(text[start:text.index("\n", text.index(last, start))])
    return [squash(p) for p in parts] == [squash(p) for p in SEED_000]


def to_symgraph(code: str, root: str, ctx: str = "cpu", n_samples: Optional[int] = None,
                learning_rate: Optional[float] = None, epochs: int = 1) -> str:
    """The edits: the import (``mxnet`` -> ``symgraph``) and the dataset's ``root``; for a
    CPU run the context; for a shortened run the number of samples (``Dataset.take``) and,
    optionally, the learning rate; for a longer one the number of epochs."""
    code = code.replace("import mxnet as mx", "import symgraph as mx")
    code = code.replace("from mxnet", "from symgraph")
    dataset = f"MNIST(root={root!r}, train=True)"
    if n_samples is not None:
        dataset += f".take({n_samples})"
    code = code.replace("MNIST(train=True)", dataset)
    code = code.replace("ctx = mx.gpu()", f"ctx = mx.{ctx}()")
    code = code.replace("for epoch in range(1):", f"for epoch in range({epochs}):")
    if learning_rate is not None:
        code = code.replace("{'learning_rate': 0.01}", f"{{'learning_rate': {learning_rate}}}")
    return code


def seed_network(hybrid: bool = False) -> type:
    """Seed 000's ``SimpleCNN`` class (``HYBRID_MODEL``'s with ``hybrid``) as symgraph runs it:
    the model part up to the line that picks a context, run on its own (benchmarks use it)."""
    code = to_symgraph(HYBRID_MODEL if hybrid else SEED_000[0], root="")
    ns: dict = {}
    exec(compile(code[:code.index("ctx = mx.")], "<seed 000 network>", "exec"), ns)
    return ns["SimpleCNN"]
