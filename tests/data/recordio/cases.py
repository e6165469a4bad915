"""The ImageRecordIter arguments of each golden case: ``make_golden.py`` writes MXNet's batches
for them, ``tests/image/test_golden_recordio.py`` reads ours with the same arguments. Every case
reads golden.rec with batch_size 2."""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = {
    "raw": dict(data_shape=(3, 12, 12)),
    "plain": dict(data_shape=(3, 12, 12), mean_r=10.0, mean_g=20.0, mean_b=30.0,
                  std_r=2.0, std_g=3.0, std_b=4.0, scale=0.5),
    "gray": dict(data_shape=(1, 10, 10)),
    "resize": dict(data_shape=(3, 9, 9), resize=10, inter_method=1),
    "nearest": dict(data_shape=(3, 9, 9), resize=11, inter_method=0),
    "mirror": dict(data_shape=(3, 12, 12), mirror=True),
    "multilabel": dict(data_shape=(3, 12, 12), path_imglist=os.path.join(HERE, "multi.lst"),
                       label_width=2),
}
