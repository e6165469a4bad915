"""Built-in operators. Importing this package registers them all."""
from . import (activation, constant, control_flow, control_flow_branch, conv, conv_act_pool,  # noqa: F401
               creation, ctc, custom, deconv, detection_box, detection_deformable,
               detection_multibox, detection_proposal, detection_roi, dot, elemwise, fused,
               image, indexing, indexing_nd, khatri_rao, layout, layout_extra, linalg_blas,
               linalg_factor, linalg_tri, loss, lrn, math, math_extra, nn, norm, norm_l2,
               norm_layer, pool, random_pdf, rearrange, rnn, sampling, sampling_extra, sequence,
               shape, sorting, tensor, update_adamw, update_checks, update_multi, update_ops,
               upsampling)
from . import (attention, boolean_mask, contrib_small, correlation, deformable,  # noqa: F401,E402
               loss_extra, refused, resize, rnn_param_concat, sampler, spectral,
               sync_batch_norm)
from . import batch_norm_relu, hawkes, image_color, image_hue, image_resize  # noqa: F401,E402
from . import sampling_unique  # noqa: F401,E402
from . import slice_assign  # noqa: F401,E402
from . import creation_range, histogram  # noqa: F401,E402
from . import attention_heads  # noqa: F401,E402
from . import legacy  # noqa: F401,E402  (last: aliases of the ops registered above)
