// kiln.data (torch.utils.data): datasets, samplers, collation and the DataLoader.

export { TensorDataset, Subset, randomSplit, type Dataset, type BatchedDataset } from './dataset.js';
export { SequentialSampler, RandomSampler, type Sampler, type ResumableSampler, type SamplerState, type RandomSamplerOptions } from './sampler.js';
export { defaultCollate } from './collate.js';
export { DataLoader, type DataLoaderOptions, type DataLoaderState } from './dataloader.js';
