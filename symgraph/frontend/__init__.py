"""The front ends: ``sg.sym`` (``symbol``, its JSON ``serialize``, control flow, op
documentation), Python custom operators (``operator``), image ops and AMP; the imperative
engine behind ``sg.nd`` and ``autograd`` belongs to this layer too."""
