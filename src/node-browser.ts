// 'kilnjs/node' in a browser bundle (package.json "exports" > "./node" > "browser"): the Node
// entry reads files and loads native code, so a bundle that reaches it fails here, by name,
// instead of on a missing `node:fs`.
export {};

throw new Error("'kilnjs/node' is Node-only (files, the native backend, the disk cache): in a browser, import 'kilnjs'");
