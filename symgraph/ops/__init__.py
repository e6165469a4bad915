"""Built-in operators. Importing this package registers them all."""
from . import (activation, constant, control_flow, control_flow_branch, conv,  # noqa: F401
               conv_act_pool, creation, ctc, custom, deconv, dot, elemwise, fused, image,
               indexing, indexing_nd, khatri_rao, layout, layout_extra, linalg_blas,
               linalg_factor, linalg_tri, loss, lrn, math, math_extra, nn, norm, norm_l2,
               norm_layer, pool, random_pdf, rearrange, rnn, sampling, sampling_extra, sequence,
               shape, sorting, sync_batch_norm, tensor, update_checks, update_multi, update_ops,
               upsampling)
