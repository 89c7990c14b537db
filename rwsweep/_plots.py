def plot_sweep(*a, **k):
    raise NotImplementedError
