"""PyTorch implementation: model, fast and autograd gradients, training, metrics."""
