// `require("edge-offload/fetch")`: see load.cjs.
module.exports = require("./load.cjs")(require, "../integrations/fetch.js", "edge-offload/fetch");
