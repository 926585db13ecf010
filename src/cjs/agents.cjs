// `require("edge-offload/agents")`: see load.cjs.
module.exports = require("./load.cjs")(require, "../integrations/agents.js", "edge-offload/agents");
