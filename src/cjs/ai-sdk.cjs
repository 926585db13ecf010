// `require("edge-offload/ai-sdk")`: see load.cjs.
module.exports = require("./load.cjs")(require, "../integrations/ai-sdk.js", "edge-offload/ai-sdk");
